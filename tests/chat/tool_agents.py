"""Agents for the end-to-end tests of tools, approvals, continuations and resume."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import anyio
import orjson

from tests.gated import Gate, GatedModel
from think import Think, callable, tool
from think.hooks import TurnContext
from think.models.base import ModelRequest, TextContent, ToolMessage, UserMessage
from think.testing.models import Reply, ScriptedModel, call, error, text
from think.tools.tool import client_tool


@tool(needs_approval=True)
def notify(message: str) -> str:
    """Notify the team.

    Args:
        message: What to say.
    """
    return f"Sent: {message}"


def said(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if isinstance(message, UserMessage):
            return " ".join(c.text for c in message.content if isinstance(c, TextContent))
    return ""


def script(request: ModelRequest) -> Reply:
    """`locate` → a client tool call; `both` → two at once; `notify` → a call needing approval;
    `browser` → the browser's own tool; `boom` → a model error; else `Echo: …`. After tool
    results: `Done: <outputs>`."""
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        return "Done: " + "; ".join(r.output if isinstance(r.output, str) else orjson.dumps(r.output).decode()
                                    for r in last.results)
    words = said(request)
    if words.startswith("locate"):
        return call("get_location", id="loc1")
    if words.startswith("both"):
        return [call("get_location", id="loc1"), call("get_time", id="time1")]
    if words.startswith("notify"):
        return call("notify", id="n1", message="hello")
    if words.startswith("browser"):
        return call("getBrowserInfo", id="b1")
    if words.startswith("boom"):
        return [text("About to fail. "), error("mock model exploded")]
    return f"Echo: {words}"



class ToolChat(Gate, Think):
    workspace_bash = False

    def get_model(self) -> Any:
        history = self.session.history()
        if history and history[-1].role == "user" and history[-1].text.startswith("gated"):
            return GatedModel(self.gate)
        if self.kv_get("hold_continuations") and history and history[-1].role == "assistant":
            return GatedModel(self.gate)
        return ScriptedModel(script)

    def get_tools(self) -> list[Any]:
        return [notify, client_tool("get_location"), client_tool("get_time")]

    def get_skill_script_runner(self) -> None:
        return None

    @callable
    def open_gate(self) -> None:
        self.gate().set()

    @callable
    def hold_continuations(self) -> None:
        """Continuations stream three words, then wait for the gate."""
        self.kv_set("hold_continuations", True)


class DebouncedChat(ToolChat):
    """Debounces overlapping messages; a turn answering `held …` waits in `before_turn` (before its
    stream starts) until `open_start` is called, so a test can look at the pre-stream window."""

    message_concurrency = MappingProxyType({"strategy": "debounce", "debounce": 0.3})
    _held_turn: anyio.Event | None = None

    def start_gate(self) -> anyio.Event:
        if self._held_turn is None:
            self._held_turn = anyio.Event()
        return self._held_turn

    async def before_turn(self, ctx: TurnContext) -> Any:
        history = self.session.history()
        if history and history[-1].role == "user" and history[-1].text.startswith("held"):
            await self.start_gate().wait()
        return await super().before_turn(ctx)

    @callable
    def open_start(self) -> None:
        self.start_gate().set()
