"""The agents of the cross-process call tests (`test_peer_calls.py`), served by real processes.

`Parent` has two children: a `Counter` (a plain agent with state) and an `Echo` (a chat agent
whose answer streams word by word). `Parent.let_go` hibernates the parent as soon as it is idle,
so a test can leave its children open in one process and open the parent in another.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import anyio

from think import Agent, Think, callable
from think.models.base import ModelRequest
from think.models.events import Finish, StreamEvent, TextDelta
from think.runtime.embedded import EmbeddedRuntime
from think.testing import ScriptedModel
from think.turns.callbacks import ChatCallback


class Counter(Agent):
    initial_state: ClassVar[dict[str, int]] = {"count": 0}

    async def add(self, n: int) -> dict[str, Any]:
        count = int(self.state["count"]) + n
        await self.set_state({"count": count})
        return {"count": count, "process": str(getattr(self.runtime, "node_id", ""))}


class Echo(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: f"echo of {request.last_user_text}, word by word")


class GatedModel:
    """Streams `part `, then holds while the file `THINK_TEST_GATE` names exists (logging `hold`
    to `THINK_TEST_TOOLS`), then `done.`."""

    model_id = "gated"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        yield TextDelta("part ")
        gate = anyio.Path(os.environ.get("THINK_TEST_GATE", "/nonexistent"))
        if await gate.exists():
            await anyio.Path(os.environ["THINK_TEST_TOOLS"]).write_text("hold\n")
        while await gate.exists():  # noqa: ASYNC110 - the test removes the file
            await anyio.sleep(0.02)
        yield TextDelta("done.")
        yield Finish("stop")


class Slow(Think):
    def get_model(self) -> GatedModel:
        return GatedModel()


class Parent(Think):
    _tasks: ClassVar[set[asyncio.Task[None]]] = set()

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(["(the parent does not chat)"])

    @callable()
    async def open_children(self) -> None:
        await self.sub_agent(Counter, "c")
        await self.sub_agent(Echo, "e")

    @callable()
    async def bump(self, n: int) -> dict[str, Any]:
        child = await self.sub_agent(Counter, "c")
        return await child.add(n)  # type: ignore[no-any-return]

    @callable()
    async def ask(self, text: str) -> dict[str, Any]:
        child = await self.sub_agent(Echo, "e")
        chunks: list[str] = []
        started: list[Any] = []
        result = await child.chat(text, ChatCallback(on_start=started.append, on_event=chunks.append))
        return {"status": result.status, "text": result.message.text if result.message else None,
                "chunks": len(chunks), "started": len(started)}

    @callable()
    async def ask_slow(self, text: str) -> str | None:
        child = await self.sub_agent(Slow, "s")
        result = await child.chat(text)
        return result.message.text if result.message else None

    @callable()
    async def open_slow(self) -> None:
        await self.sub_agent(Slow, "s")

    @callable()
    async def abort_slow(self) -> int:
        return await self.abort_sub_agent(Slow, "s")

    @callable()
    async def delete_slow(self) -> dict[str, Any]:
        deleted = await self.delete_sub_agent(Slow, "s")
        return {"deleted": deleted, "children": [list(c) for c in self.sub_agents.list()]}

    @callable()
    async def run_tool(self, text: str) -> str | None:
        """The child `e` as an agent tool (traced: a `sub_agent echo` span holds its turn)."""
        done = await self.run_agent_tool(Echo, input=text, run_id="e")
        return str(done.output) if done.output is not None else done.error

    @callable()
    def let_go(self) -> None:
        runtime = self.runtime
        assert isinstance(runtime, EmbeddedRuntime)

        async def hibernate() -> None:
            while not await runtime.hibernate(type(self), self.name):  # noqa: ASYNC110 - until the call that asked ends
                await asyncio.sleep(0.01)

        task = asyncio.get_running_loop().create_task(hibernate())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
