"""Agents the UI-protocol tests (AG-UI, A2A) serve."""

from __future__ import annotations

from typing import Any, ClassVar

from tests.chat.tool_agents import ToolChat, said
from tests.chat.tool_agents import script as tool_script
from think import tool
from think.models.base import ModelRequest, ToolMessage
from think.testing.models import Reply, ScriptedModel, call, reasoning, text
from think.tools.tool import ToolContext


@tool
async def count_up(ctx: ToolContext, by: int) -> str:
    """Add to the shared counter.

    Args:
        by: How much to add.
    """
    agent: Any = ctx.agent
    state = dict(agent.state or {})
    state["count"] = int(state.get("count", 0)) + by
    await agent.set_state(state)
    return f"count is {state['count']}"


def script(request: ModelRequest) -> Reply:
    """`ToolChat`'s script, and: `think …` → reasoning then text; `count …` → the `count_up` tool;
    `two parts` → text, a server tool call, more text."""
    last = request.messages[-1]
    words = said(request)
    if isinstance(last, ToolMessage) and words.startswith("two parts"):
        return "Second part."
    if isinstance(last, ToolMessage) and words.startswith("count"):
        return "Counted."
    if isinstance(last, ToolMessage):
        return tool_script(request)
    if words.startswith("think"):
        return [reasoning("Let me see."), text("Thought it through.")]
    if words.startswith("count"):
        return call("count_up", id="c1", by=2)
    if words.startswith("two parts"):
        return [text("First part."), call("count_up", id="c2", by=1)]
    return tool_script(request)


class ProtocolChat(ToolChat):
    """`ToolChat` (approvals, client tools, gated turns) with state and a few more prompts."""

    description: ClassVar[str] = "Answers questions and counts."
    initial_state: ClassVar[Any] = {"count": 0}

    def get_model(self) -> Any:
        model = super().get_model()
        return ScriptedModel(script) if isinstance(model, ScriptedModel) else model

    def get_tools(self) -> list[Any]:
        return [*super().get_tools(), count_up]
