"""Served agents as an MCP server: the SDK's client against a real uvicorn server (`create_app(mcp=True)`)
and against `think serve --mcp` in its own process."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import orjson
import pytest
from mcp import Client
from starlette.testclient import TestClient

from tests.chat.live_server import serve_in_thread
from tests.mcp.conftest import ROOT, env, free_port
from think import Think, callable
from think.cli import mcp_allowed_hosts
from think.models.base import ModelRequest
from think.models.events import Finish, StreamEvent, TextDelta
from think.runtime import EmbeddedRuntime
from think.server import create_app

GATE = threading.Event()
"""Opened by the test: the `wait …` answer holds in the middle until then (the server runs in a thread)."""


class Held:
    """Streams `Waiting `, holds until `GATE` opens, then `then done.`."""

    model_id = "held"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        said = request.last_user_text
        if not said.startswith("wait"):
            for word in f"You said: {said}".split(" "):
                yield TextDelta(word if word == said.split(" ")[-1] else word + " ")
            yield Finish("stop")
            return
        yield TextDelta("Waiting ")
        await anyio.to_thread.run_sync(GATE.wait)
        yield TextDelta("then done.")
        yield Finish("stop")


class Helper(Think):
    def get_model(self) -> Held:
        return Held()

    @callable(mcp=True, description="How many messages the instance has.")
    def count_messages(self, role: str | None = None) -> int:
        return len([m for m in self.messages if role is None or m.role == role])

    @callable()
    def not_for_mcp(self) -> str:
        return "hidden"


async def test_the_sdk_client_chats_with_a_served_agent(tmp_path: Path) -> None:
    app = create_app([Helper], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60), mcp=True)
    with serve_in_thread(app) as live:
        progress_seen: list[tuple[float, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            progress_seen.append((progress, message))

        async with Client(f"{live.base_url}/mcp") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"chat_helper", "helper_count_messages"}  # not_for_mcp is not offered
            assert set(tools["helper_count_messages"].input_schema["properties"]) == {"name", "role"}
            assert set(tools["chat_helper"].input_schema["properties"]) == {"name", "message", "operation_id"}
            result = await client.call_tool("chat_helper", {"name": "alice", "message": "hello there"},
                                            progress_callback=on_progress)
            assert not result.is_error, result
            assert result.content[0].text == "You said: hello there"  # type: ignore[union-attr]
            assert len(progress_seen) == 4 and "".join(m or "" for _, m in progress_seen) == "You said: hello there"
            assert [v for v, _ in progress_seen] == [1, 2, 3, 4]

            again = await client.call_tool("chat_helper", {"name": "alice", "message": "twice", "operation_id": "op-1"})
            same = await client.call_tool("chat_helper", {"name": "alice", "message": "twice", "operation_id": "op-1"})
            assert again.content[0].text == same.content[0].text == "You said: twice"  # type: ignore[union-attr]

            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["think://helper/{name}/messages"]
            read = await client.read_resource("think://helper/alice/messages")
            messages = orjson.loads(read.contents[0].text)  # type: ignore[union-attr]
            assert [m["role"] for m in messages] == ["user", "assistant"] * 2  # op-1 ran once
            assert messages[-1]["parts"][-1]["text"] == "You said: twice"
            counted = await client.call_tool("helper_count_messages", {"name": "alice", "role": "user"})
            assert counted.content[0].text == "2"  # type: ignore[union-attr]


async def test_a_turn_outlives_its_dropped_connection_and_is_asked_again_by_operation_id(tmp_path: Path) -> None:
    app = create_app([Helper], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60), mcp=True)
    GATE.clear()
    with serve_in_thread(app) as live:
        url = f"{live.base_url}/mcp"
        streaming = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            streaming.set()

        async with anyio.create_task_group() as tasks:
            async def first_call() -> None:
                async with Client(url) as client:
                    await client.call_tool("chat_helper", {"name": "bob", "message": "wait for me",
                                                           "operation_id": "op-9"}, progress_callback=on_progress)

            tasks.start_soon(first_call)
            with anyio.fail_after(30):
                await streaming.wait()  # the turn is running and held in the middle
            tasks.cancel_scope.cancel()  # the MCP client goes away mid-turn
        GATE.set()
        async with Client(url) as client:
            result = await client.call_tool("chat_helper", {"name": "bob", "message": "wait for me",
                                                            "operation_id": "op-9"})
            assert result.content[0].text == "Waiting then done."  # type: ignore[union-attr]
            read = await client.read_resource("think://helper/bob/messages")
            roles = [m["role"] for m in orjson.loads(read.contents[0].text)]  # type: ignore[union-attr]
            assert roles == ["user", "assistant"]  # one turn: the second call waited for the first one's


def _serve(data: Path, port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "think.cli", "serve", "tests.mcp.test_serve:Helper", "--mcp",
                             "--no-ui", "--port", str(port), "--data-dir", str(data)], cwd=ROOT, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


async def _connected(url: str, process: subprocess.Popen[bytes]) -> None:
    import httpx

    with anyio.fail_after(60):
        while True:
            if process.poll() is not None:
                raise AssertionError(process.stderr.read().decode() if process.stderr else "exited")
            try:
                async with httpx.AsyncClient() as http:
                    await http.get(url)
                return
            except httpx.TransportError:
                await anyio.sleep(0.05)  # polling the port with a deadline


async def test_think_serve_mcp(tmp_path: Path) -> None:
    port = free_port()
    process = _serve(tmp_path / "data", port)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        await _connected(url, process)
        async with Client(url) as client:
            result = await client.call_tool("chat_helper", {"name": "carol", "message": "over the cli"})
            assert result.content[0].text == "You said: over the cli"  # type: ignore[union-attr]
    finally:
        process.terminate()
        process.wait(timeout=20)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "host-check", "version": "0"}}}


@pytest.mark.parametrize(("allowed", "host", "status"), [
    (None, "127.0.0.1:8000", 200),
    (None, "agents.example", 421),  # the default: loopback Host names only
    (["agents.example"], "agents.example", 200),
    (["agents.example"], "agents.example:8443", 421),
    (["agents.example:*"], "agents.example:8443", 200),
    (["agents.example:*"], "evil.example:8443", 421),
])
def test_the_mcp_endpoint_answers_the_hosts_it_is_told_to(tmp_path: Path, allowed: list[str] | None, host: str,
                                                            status: int) -> None:
    app = create_app([Helper], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60), mcp=True,
                     mcp_allowed_hosts=allowed)
    with TestClient(app, base_url=f"http://{host}") as client:
        response = client.post("/mcp", json=INITIALIZE,
                               headers={"accept": "application/json, text/event-stream"})
    assert response.status_code == status, response.text


def test_think_serve_allows_its_own_host_name() -> None:
    assert mcp_allowed_hosts("127.0.0.1", ()) is None and mcp_allowed_hosts("0.0.0.0", ()) is None
    assert mcp_allowed_hosts("10.0.0.5", ()) == ["10.0.0.5", "10.0.0.5:*"]
    assert mcp_allowed_hosts("::", ("agents.example",)) == ["agents.example"]
    assert mcp_allowed_hosts("fd00::5", ()) == ["[fd00::5]", "[fd00::5]:*"]
