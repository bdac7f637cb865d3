"""Agents for the end-to-end tests of tools, approvals, continuations and resume."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import MappingProxyType
from typing import Any

import anyio
import orjson

from think import Think, callable, tool
from think.models.base import ModelRequest, TextContent, ToolMessage, UserMessage
from think.models.events import Finish, StreamEvent, TextDelta
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


class HeldModel:
    """Streams "w01 w02 w03 ", waits for the agent's gate, then "w04 w05" (for a continuation
    too: the gate holds whatever turn asks `gated`)."""

    model_id = "held"

    def __init__(self, agent: ToolChat) -> None:
        self.agent = agent

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        for word in ("w01 ", "w02 ", "w03 "):
            yield TextDelta(word)
        await self.agent.gate().wait()
        for word in ("w04 ", "w05"):
            yield TextDelta(word)
        yield Finish("stop")


class ToolChat(Think):
    workspace_bash = False
    _gate: anyio.Event | None = None

    def get_model(self) -> Any:
        history = self.session.history()
        if history and history[-1].role == "user" and history[-1].text.startswith("gated"):
            return HeldModel(self)
        if self.kv_get("hold_continuations") and history and history[-1].role == "assistant":
            return HeldModel(self)
        return ScriptedModel(script)

    def get_tools(self) -> list[Any]:
        return [notify, client_tool("get_location"), client_tool("get_time")]

    def get_skill_script_runner(self) -> None:
        return None

    def gate(self) -> anyio.Event:
        if self._gate is None:
            self._gate = anyio.Event()
        return self._gate

    @callable
    def open_gate(self) -> None:
        self.gate().set()

    @callable
    def hold_continuations(self) -> None:
        """Continuations stream three words, then wait for the gate."""
        self.kv_set("hold_continuations", True)


class DebouncedChat(ToolChat):
    message_concurrency = MappingProxyType({"strategy": "debounce", "debounce_ms": 300})
