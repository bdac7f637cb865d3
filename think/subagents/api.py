"""The sub-agent methods of `Think` (a mixin: the work is done by `SubAgents`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from think.messages import JSONObject
from think.runtime.agent import Agent
from think.subagents.children import SubAgents, SubAgentStub
from think.subagents.tools import AgentToolResult, run_agent_tool
from think.tools.run import current_tool_call
from think.turns.callbacks import Signal
from think.turns.runner import new_request_id
from think.turns.turn import TurnRequest
from think.turns.writer import in_turn_writer, write_data

PROGRESS_COALESCE = 0.2
"""Seconds within which a second progress report is dropped (the first of a burst is sent)."""

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
    _progress_at: float = 0.0
    _milestones: int | None = None

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

    async def report_progress(self, *, fraction: float | None = None, message: str | None = None,
                              phase: str | None = None, data: Any = None,
                              milestone: str | None = None) -> Literal["emitted", "coalesced", "inactive"]:
        """Tell whoever watches this agent's turn how far it is (a child run: the parent's clients,
        through `useAgentToolEvents`). Call it from a tool or a hook of the running turn.

        Progress is a transient `data-agent-progress` part, at most one per 200 ms (a burst keeps
        the first; `fraction >= 1` always goes out). A `milestone` is a `data-agent-milestone`
        part kept in the reply, numbered from 0 per agent. Reported from a tool, both carry that
        call's `toolCallId`: the web UI shows them on its card, `think chat` under it. "inactive"
        outside a turn.
        """
        think = cast("Think", self)
        if in_turn_writer(think) is None:
            return "inactive"
        now = time.time()
        fields: dict[str, Any] = {}
        if fraction is not None:
            fields["fraction"] = float(fraction)
        if message is not None:
            fields["message"] = str(message)
        if phase is not None:
            fields["phase"] = str(phase)
        if data is not None:
            fields["data"] = data
        if (call_id := current_tool_call()) is not None:
            fields["toolCallId"] = call_id  # reported from a tool: clients show it on that call
        if milestone:
            if self._milestones is None:
                self._milestones = sum(1 for m in think.messages for part in m.parts
                                       if part.type == "data-agent-milestone")
            sequence, self._milestones = self._milestones, self._milestones + 1  # (not rate-limited)
            payload = {"name": milestone, "sequence": sequence, "at": int(now * 1000), **fields}
            await write_data(think, "agent-milestone", payload, id=f"milestone-{sequence}")
            return "emitted"
        done = fraction is not None and fraction >= 1
        if now - self._progress_at < PROGRESS_COALESCE and not done:
            return "coalesced"
        self._progress_at = now
        await write_data(think, "agent-progress", fields, transient=True)
        return "emitted"

    async def abort_sub_agent(self, cls: type[Agent], name: str, reason: str | None = None) -> int:
        """Cancel a child's running turns and submissions; how many turns were cancelled."""
        return await self.sub_agents.abort(cls, name, reason)

    async def delete_sub_agent(self, cls: type[Agent], name: str) -> bool:
        """Abort a child and delete it with its database; False if it did not exist."""
        return await self.sub_agents.delete(cls, name)
