"""The sub-agent methods of `Think` (a mixin: the work is done by `SubAgents`)."""

from __future__ import annotations

from typing import Any, ClassVar

from think.messages import JSONObject
from think.runtime.agent import Agent
from think.subagents.children import SubAgents, SubAgentStub
from think.subagents.tools import AgentToolResult, run_agent_tool
from think.turns.callbacks import Signal


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

    async def abort_sub_agent(self, cls: type[Agent], name: str, reason: str | None = None) -> int:
        """Cancel a child's running turns and submissions; how many turns were cancelled."""
        return await self.sub_agents.abort(cls, name, reason)

    async def delete_sub_agent(self, cls: type[Agent], name: str) -> bool:
        """Abort a child and delete it with its database; False if it did not exist."""
        return await self.sub_agents.delete(cls, name)
