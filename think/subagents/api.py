"""The sub-agent methods of `Think` (a mixin: the work is done by `SubAgents`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

from think.messages import JSONObject
from think.runtime.agent import Agent
from think.subagents.children import SubAgents, SubAgentStub
from think.subagents.tools import AgentToolResult, run_agent_tool
from think.turns.callbacks import Signal
from think.turns.runner import new_request_id
from think.turns.turn import TurnRequest

if TYPE_CHECKING:
    from think.agent import Think
    from think.messages import Message


def _position_of(history: list[Message], prompt: str) -> int | None:
    """Where the newest user message with text `prompt` stands."""
    return next((i for i in range(len(history) - 1, -1, -1)
                 if history[i].role == "user" and history[i].text == prompt), None)


class SubAgentAPI:
    """Child agents: `sub_agent`, `run_agent_tool`, `abort_sub_agent`, `delete_sub_agent`."""

    max_concurrent_agent_tools: ClassVar[int | None] = None
    """Child runs as tools that may be in progress at once (None: no cap)."""

    sub_agents: SubAgents

    async def sub_agent(self, cls: type[Agent], name: str) -> SubAgentStub:
        """A stub for the child `(cls, name)` of this agent, created and started if needed.

        `await stub.method(...)` runs on the child; `await stub.chat(input, callback)` streams its
        turn through `callback`. Browsers reach it at `/agents/<this>/<name>/sub/<child>/<name>`.
        """
        return await self.sub_agents.get(cls, name)

    async def run_agent_tool(self, cls: type[Agent], *, input: Any, run_id: str | None = None,
                             parent_tool_call_id: str | None = None, signal: Signal | None = None,
                             display: JSONObject | None = None) -> AgentToolResult:
        """Run a child on `input` (its prompt) and stream its progress to this agent's clients as
        `agent-tool-event` frames; see `think.subagents.tools`."""
        return await run_agent_tool(self, cls, input=input, run_id=run_id,  # type: ignore[arg-type]
                                    parent_tool_call_id=parent_tool_call_id, signal=signal, display=display)

    async def reattach_run(self, prompt: str, timeout: float | None = 600.0) -> str | None:  # noqa: ASYNC109
        """Called on a child by a parent that asks a run again (after a crash, say): None if this
        child never got `prompt` (the run starts as usual); else its answer, once its own recovery
        has settled (a prompt saved but never answered is answered now, without a second copy)."""
        think = cast("Think", self)
        at = _position_of(think.messages, prompt)
        if at is None:
            return None
        await think.wait_until_stable(timeout=timeout)
        history = think.messages
        at = _position_of(history, prompt)
        if at is None:
            return None  # cleared meanwhile
        if at == len(history) - 1:  # nothing answers it and nothing will: answer it now
            await think.run(TurnRequest(request_id=new_request_id(), messages=()))
            history = think.messages
        return "".join(m.text for m in history[at + 1:] if m.role == "assistant")

    async def abort_sub_agent(self, cls: type[Agent], name: str, reason: str | None = None) -> int:
        """Cancel a child's running turns and submissions; how many turns were cancelled."""
        return await self.sub_agents.abort(cls, name, reason)

    async def delete_sub_agent(self, cls: type[Agent], name: str) -> bool:
        """Abort a child and delete it with its database; False if it did not exist."""
        return await self.sub_agents.delete(cls, name)
