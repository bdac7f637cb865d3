"""A model that stops mid-reply until the test lets it go, for turns that must stay running."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio

from think.models.base import ModelRequest
from think.models.events import Finish, StreamEvent, TextDelta


class GatedModel:
    """Streams `w01 w02 w03 `, waits until the gate opens, then streams `w04 w05`."""

    model_id = "gated"

    def __init__(self, gate: Callable[[], anyio.Event]) -> None:
        self.gate = gate

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        for word in ("w01 ", "w02 ", "w03 "):
            yield TextDelta(word)
        await self.gate().wait()
        for word in ("w04 ", "w05"):
            yield TextDelta(word)
        yield Finish("stop")


class Gate:
    """One gate per agent instance (mixed into a `Think` subclass); once opened it stays open."""

    _gate: anyio.Event | None = None

    def gate(self) -> anyio.Event:
        if self._gate is None:
            self._gate = anyio.Event()
        return self._gate
