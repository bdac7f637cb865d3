"""Agent classes the end-to-end chat tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

import anyio
import anyio.lowlevel

from think import ConfigurationError, Think, callable
from think.models.base import ModelRequest
from think.models.events import Finish, StreamEvent, TextDelta
from think.server import StreamingResponse
from think.testing.models import HANG, Reply, ScriptedModel, error, text


def echo(request: ModelRequest) -> Reply:
    """`Echo: <the last user text>`; "slow …" hangs until cancelled; "boom …" fails mid-stream."""
    said = request.last_user_text
    if said.startswith("slow"):
        return [text("w01 w02 w03 "), HANG]
    if said.startswith("boom"):
        return [text("About to fail. "), error("mock model exploded")]
    return f"Echo: {said}"


class GatedModel:
    """Streams "w01 w02 w03 ", waits until the agent's gate opens, then streams "w04 w05"."""

    model_id = "gated"

    def __init__(self, agent: EchoChat) -> None:
        self.agent = agent

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        for word in ("w01 ", "w02 ", "w03 "):
            yield TextDelta(word)
        await self.agent.gate().wait()
        for word in ("w04 ", "w05"):
            yield TextDelta(word)
        yield Finish("stop")


class EchoChat(Think):
    """Echoes the user; see `echo` for the special prompts. "gated …" streams three words, then
    waits for the `open_gate` RPC; "no model …" fails before anything streams."""

    model = ScriptedModel(echo)
    _gate: anyio.Event | None = None

    def get_model(self) -> ScriptedModel | GatedModel:
        history = self.session.history()
        said = history[-1].text if history and history[-1].role == "user" else ""
        if said.startswith("gated"):
            return GatedModel(self)
        if said.startswith("no model"):
            raise ConfigurationError("No model is configured")
        return self.model

    def gate(self) -> anyio.Event:
        if self._gate is None:
            self._gate = anyio.Event()
        return self._gate

    @callable
    def open_gate(self) -> None:
        """Let gated turns finish (once opened, the gate of this instance stays open)."""
        self.gate().set()

    @callable
    async def add(self, a: int, b: int) -> int:
        return a + b

    @callable
    def fail(self) -> None:
        raise ValueError("it went wrong")

    @callable(streaming=True)
    async def count(self, stream: StreamingResponse, n: int) -> str:
        for i in range(n):
            stream.send(i)
            await anyio.lowlevel.checkpoint()
        return "counted"

    async def not_exposed(self) -> str:
        return "secret"


class StatefulChat(EchoChat):
    initial_state: ClassVar[Any] = {"count": 0}
