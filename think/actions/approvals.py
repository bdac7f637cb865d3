"""One surface for all paused work: parked actions and paused code executions.

    agent.pending_approvals()                 # [{execution_id, source, descriptor}, …]
    await agent.approve_execution(execution_id)
    await agent.reject_execution(execution_id, reason="not this one")

`source` is `"action"` (a durable-pause action, `think.actions`) or `"codemode"` (an `execute`
run paused at a `needs_approval` call, `think.tools.execute`); the id decides which one is
resolved. Each runs at most once: the move out of "waiting" is a conditional write, so a second
approve, or an approve after a reject, is an error result and never a second run. The outcome
replaces the paused result in the transcript (the text the model wrote about the pause goes:
it is no longer true), then a continuation — with or without a connected client — lets the
model act on it. These are `@callable`s: any client of the agent may list and resolve them, so
serve an agent that has paused work behind the access control its approvals need.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

from think.actions.outcomes import error_output, is_error_output
from think.actions.parked import Parked
from think.actions.runtime import paused_output
from think.runtime.rpc import callable as rpc_callable

log = logging.getLogger("think.actions")
_tasks: set[asyncio.Task[None]] = set()


async def settle_in_transcript(agent: Any, tool_call_id: str | None, output: Any) -> bool:
    """Put a resolved pause's outcome in the place of its paused output, drop the text after it,
    and ask for a continuation; False when the transcript has no such call (any more)."""
    if not tool_call_id:
        return False
    message = await agent.tool_updates.replace_output(tool_call_id, output, drop_text_after=True)
    if message is None:
        return False
    await agent.continuations.after_answer(message, True)
    return True


def _invalid(execution_id: Any, why: str) -> dict[str, Any]:
    return {"status": "error", "ok": False, "execution_id": execution_id, "error": why}


class ApprovalsAPI:
    """`pending_approvals`, `approve_execution`, `reject_execution` (see the module docs)."""

    @rpc_callable(description="Paused work waiting for a person: [{execution_id, source, descriptor}].")
    def pending_approvals(self, execution_id: str | None = None) -> list[dict[str, Any]]:
        """Parked actions and paused code executions, newest first (one, with `execution_id`)."""
        items = [{"execution_id": p.execution_id, "source": "action", "descriptor": p.descriptor,
                  "created_at": p.created_at} for p in self.action_runtime.parked.pending()]  # type: ignore[attr-defined]
        runtime = self._execute()  # type: ignore[attr-defined]
        for entry in runtime.pending_executions() if runtime is not None else []:
            pending = entry.get("pending") or {}
            items.append({"execution_id": entry["execution_id"], "source": "codemode", "created_at": entry["paused_at"],
                          "descriptor": {"executionId": entry["execution_id"], "toolCallId": entry["tool_call_id"],
                                         "action": pending.get("tool"), "summary": pending.get("description"),
                                         "input": pending.get("input"), "permissions": [], "kind": "durable-pause"}})
        items.sort(key=lambda item: item["created_at"], reverse=True)
        return [i for i in items if execution_id is None or i["execution_id"] == execution_id]

    @rpc_callable(description="Approve paused work (an action or a code execution) by its execution id; runs once.")
    async def approve_execution(self, execution_id: str) -> dict[str, Any]:
        """Run the paused call once and continue the chat; a result with `status: "error"` for
        an id that is unknown, resolved, expired or not a paused execution (nothing runs)."""
        found = self._owner_of(execution_id)
        if isinstance(found, dict):
            return found
        if found is None:
            return await self._execute().approve(execution_id)  # type: ignore[attr-defined, no-any-return]
        runtime = self.action_runtime  # type: ignore[attr-defined]
        claimed, why = runtime.parked.claim(execution_id, "running", ttl=self.action_pending_approval_ttl)  # type: ignore[attr-defined]
        if not claimed:
            return _invalid(execution_id, f"execution {execution_id!r} is not waiting for approval ({why})")
        parked = runtime.parked.get(execution_id)
        return await self._finish_action(parked, await runtime.resolve(parked))

    @rpc_callable(description="Reject paused work by its execution id: the paused call never runs.")
    async def reject_execution(self, execution_id: str, reason: str | None = None) -> dict[str, Any]:
        """End paused work without running it (the model hears it was rejected, and why)."""
        if reason is not None and not isinstance(reason, str):
            return _invalid(execution_id, "reason must be a string")
        found = self._owner_of(execution_id)
        if isinstance(found, dict):
            return found
        if found is None:
            return await self._execute().reject(execution_id, reason)  # type: ignore[attr-defined, no-any-return]
        runtime = self.action_runtime  # type: ignore[attr-defined]
        claimed, why = runtime.parked.claim(execution_id, "rejected", ttl=self.action_pending_approval_ttl)  # type: ignore[attr-defined]
        if not claimed:
            return _invalid(execution_id, f"execution {execution_id!r} is not waiting for approval ({why})")
        outcome = error_output("ActionRejectedError", f"a person rejected {found.action!r}"
                               + (f": {reason}" if reason else "") + "; it did not run", reason=reason)
        runtime.parked.finish(execution_id, "rejected", outcome)
        parked = runtime.parked.get(execution_id)
        return await self._finish_action(parked, outcome)

    def _owner_of(self, execution_id: Any) -> Parked | dict[str, Any] | None:
        """The parked action of this id; None for a code execution; an error result otherwise."""
        if not isinstance(execution_id, str) or not execution_id.strip():
            return _invalid(execution_id, "execution_id must be a non-empty string (see pending_approvals())")
        parked: Parked | None = self.action_runtime.parked.get(execution_id)  # type: ignore[attr-defined]
        if parked is not None:
            if parked.kind != "durable-pause":
                return _invalid(execution_id, f"{execution_id!r} is an approval-gated call of {parked.action!r}: "
                                "it is answered in the chat (cf_agent_tool_approval / approve_tool_call), "
                                "not with approve_execution")
            return parked
        runtime = self._execute()  # type: ignore[attr-defined]
        if runtime is not None and runtime.store.get(execution_id) is not None:
            return None
        return _invalid(execution_id, f"no paused execution {execution_id!r} (unknown id; see pending_approvals())")

    async def _finish_action(self, parked: Parked | None, outcome: Any) -> dict[str, Any]:
        assert parked is not None
        try:
            await settle_in_transcript(self, parked.tool_call_id, outcome)
        finally:
            self.action_runtime.parked.mark_applied(parked.execution_id)  # type: ignore[attr-defined]
        ok = not is_error_output(outcome)
        return {"status": "completed" if ok else "rejected" if parked.status == "rejected" else "failed",
                "ok": ok, "execution_id": parked.execution_id, "source": "action", "action": parked.action,
                "output": outcome}

    def _resume_paused_work(self) -> None:
        """At start: finish what a dead process left — approved actions it was running (the
        ledger decides whether they may run), outcomes not yet in the transcript, and approved
        code executions (in the background; the start does not wait); drop ledger rows past their
        retention (settled: 30 days, pending: 90)."""
        self._resume_interrupted_executions()  # type: ignore[attr-defined]
        db = self.db  # type: ignore[attr-defined]
        if db.value("SELECT 1 FROM think_action_ledger LIMIT 1"):
            self.action_runtime.ledger.sweep()  # type: ignore[attr-defined]  # rows past their retention
        if not db.value("SELECT 1 FROM think_action_approvals WHERE kind = 'durable-pause' AND "
                        "(status = 'running' OR (status IN ('settled', 'rejected') AND applied = 0)) LIMIT 1"):
            return

        async def run() -> None:
            runtime = self.action_runtime  # type: ignore[attr-defined]
            for parked in runtime.parked.unfinished():
                try:
                    outcome = await runtime.resolve(parked) if parked.status == "running" else parked.result
                    await self._finish_action(runtime.parked.get(parked.execution_id), outcome)
                except Exception:
                    log.exception("could not finish the approved action %s after a restart", parked.execution_id)

        task = asyncio.get_running_loop().create_task(run(), context=contextvars.Context())
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)


__all__ = ["ApprovalsAPI", "paused_output", "settle_in_transcript"]
