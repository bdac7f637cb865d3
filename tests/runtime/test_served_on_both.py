"""A chat agent served on each runtime (`make_runtime`: embedded, and the cluster runtime over a
real PostgreSQL): turns, the transcript, its full-text search, state and schedules, across
hibernation. The same test, so the cluster keeps every behaviour of one process."""

from __future__ import annotations

import httpx

from tests.chat.live_server import serve_in_thread
from tests.runtimes import MakeRuntime
from tests.submissions.server_process import eventually
from think import Think, callable
from think.client import AgentClient
from think.server import create_app
from think.testing import ScriptedModel


class Librarian(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: f"Filed under {request.last_user_text.split()[-1]}.")

    @callable
    async def find(self, words: str) -> list[str]:
        return [hit.content for hit in self.session.search(words)]

    @callable
    async def later(self) -> None:
        self.schedule(3600, "noop", id="mine")

    @callable
    async def scheduled(self) -> list[str]:
        return [task.id for task in self.get_schedules() if task.id == "mine"]

    async def noop(self, payload: object) -> None:
        """A scheduled no-op."""


async def test_turns_search_state_and_schedules_survive_hibernation(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(idle_timeout=0)  # hibernated as soon as nothing uses it
    app = create_app([Librarian], runtime=runtime)
    with serve_in_thread(app) as server:
        url = f"{server.ws_base_url}/agents/librarian/shelf"
        async with AgentClient.connect(url, call_timeout=10) as client:
            assert (await (await client.send_chat("a book about herons")).wait()).text == "Filed under herons."
            await (await client.send_chat("a map of the fjords")).wait()
            await client.set_state({"shelves": 2})
            await client.call("later")
        await eventually(lambda: runtime.live() == [])  # closed (in the cluster: written back to Postgres)
        async with AgentClient.connect(url, call_timeout=10) as again:
            assert [m.text for m in again.messages] == ["a book about herons", "Filed under herons.",
                                                         "a map of the fjords", "Filed under fjords."]
            assert again.state == {"shelves": 2}
            assert sorted(await again.call("find", "heron")) == ["Filed under herons.", "a book about herons"]
            assert await again.call("scheduled") == ["mine"]
        async with httpx.AsyncClient(timeout=10) as http:
            stored = (await http.get(f"{server.base_url}/agents/librarian/shelf/get-messages")).json()
        assert len(stored) == 4

