"""The agent's built-in callables for executions: list, audit, snippets.

`Think` mixes this in; the methods work on whatever `create_execute_tool(self)` set up (after a
restart they build it by reading the agent's tools once). Paused executions are approved and
rejected through the one surface for all paused work, `think.actions.approvals`
(`approve_execution`, `reject_execution`, `pending_approvals`): an approved or rejected
execution's outcome replaces the paused result in the transcript, and a continuation turn — with
or without a connected client — lets the model act on it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import TYPE_CHECKING, Any

from think.runtime.rpc import callable as rpc_callable
from think.tools.execute.store import DEFAULT_PAUSED_TTL

if TYPE_CHECKING:
    from think.tools.execute.runtime import ExecuteRuntime

log = logging.getLogger("think.execute")
_tasks: set[asyncio.Task[None]] = set()


class ExecutionAPI:
    """Callables over the agent's `execute` runtime (see the module docs)."""

    execute_runtime: ExecuteRuntime | None = None

    def _execute(self) -> ExecuteRuntime | None:
        if self.execute_runtime is None:
            self.all_tools()  # type: ignore[attr-defined]  # get_tools() creates and wires it
        return self.execute_runtime

    def _wire_execute_runtime(self, runtime: ExecuteRuntime) -> None:
        runtime.on_outcome = self._apply_execution_outcome

    def _resume_interrupted_executions(self) -> None:
        """At start: continue approved executions the last process did not finish (in the
        background; the start does not wait for their tool calls)."""
        db = self.db  # type: ignore[attr-defined]
        if not db.value("SELECT 1 FROM think_executions WHERE status = 'resuming' LIMIT 1"):
            return
        runtime = self._execute()
        if runtime is None:
            return

        async def run() -> None:
            try:
                await runtime.resume_interrupted()
            except Exception:
                log.exception("could not continue the approved executions of a dead process")

        task = asyncio.get_running_loop().create_task(run(), context=contextvars.Context())
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)

    async def _apply_execution_outcome(self, tool_call_id: str | None, result: dict[str, Any]) -> None:
        from think.actions.approvals import settle_in_transcript

        await settle_in_transcript(self, tool_call_id, result)

    @rpc_callable(description="Paused executions waiting for approval: execution_id, pending {tool, input}.")
    def pending_executions(self) -> list[dict[str, Any]]:
        runtime = self._execute()
        return runtime.pending_executions() if runtime is not None else []

    @rpc_callable(description="The newest executions with code, journal, outcome and duration.")
    def executions(self, limit: int = 20) -> list[dict[str, Any]]:
        runtime = self._execute()
        return runtime.executions(limit) if runtime is not None else []

    def save_snippet(self, name: str, *, execution_id: str | None = None, code: str | None = None,
                     description: str = "") -> dict[str, Any]:
        """Store a program the model can run again with `execute(snippet=name, args={...})`."""
        runtime = self._execute()
        if runtime is None:
            raise ValueError("this agent has no execute tool")
        return runtime.save_snippet(name, execution_id=execution_id, code=code, description=description)

    def expire_paused(self, older_than: float = DEFAULT_PAUSED_TTL) -> list[str]:
        """Reclaim executions paused longer than `older_than` seconds (e.g. from a scheduled task)."""
        runtime = self._execute()
        return runtime.expire_paused(older_than) if runtime is not None else []

