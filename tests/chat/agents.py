"""Agent classes the end-to-end chat tests share."""

from __future__ import annotations

from typing import Any, ClassVar

import anyio
import anyio.lowlevel

from tests.gated import Gate, GatedModel
from think import ConfigurationError, Think, callable
from think.models.base import ModelRequest
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



class EchoChat(Gate, Think):
    """Echoes the user; see `echo` for the special prompts. "gated …" streams three words, then
    waits for the `open_gate` RPC; "no model …" fails before anything streams."""

    model = ScriptedModel(echo)

    def get_model(self) -> ScriptedModel | GatedModel:
        history = self.session.history()
        said = history[-1].text if history and history[-1].role == "user" else ""
        if said.startswith("gated"):
            return GatedModel(self.gate)
        if said.startswith("no model"):
            raise ConfigurationError("No model is configured")
        return self.model

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
