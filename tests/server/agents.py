"""Agent classes for the server tests."""

from __future__ import annotations

from typing import Any, ClassVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.chat.agents import EchoChat
from think import Agent, callable
from think.testing.models import ScriptedModel


class Notes(Agent):
    """A plain agent (no chat): state, RPC and HTTP only."""

    initial_state: ClassVar[Any] = {"notes": []}

    @callable
    async def add_note(self, text: str) -> int:
        notes = [*self.state["notes"], text]
        await self.set_state({"notes": notes})
        return len(notes)

    async def on_request(self, request: Request) -> Response:
        return JSONResponse({"agent": self.name, "path": request.url.path, "method": request.method,
                             "body": (await request.body()).decode()})


class Broken(Agent):
    async def on_request(self, request: Request) -> Any:
        return {"not": "a response"}


class FailsToStart(Agent):
    async def on_start(self) -> None:
        raise RuntimeError("cannot start")


__all__ = ["Broken", "EchoChat", "FailsToStart", "Notes", "ScriptedModel"]
