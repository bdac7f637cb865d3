"""`ExecuteRuntime`: one agent's executions — run, pause, approve, reject, replay, audit, snippets.

A run is keyed by the `execute` call that started it. When a crash cut that call off, recovery
runs the same call again (the tool is `recovery="rerun"`); the runtime finds the execution still
`running` and re-runs its code against the journal it stored, so the host calls that had
completed are answered from the journal, not made again. A call that was in flight when the
process died was not journalled, so it runs again (a tool that must not run twice can say so
with `needs_approval`, which makes it a durable pause instead).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from think.sandbox.host import HostCallRefused, HostFunction, Namespaces, PendingCall, RunOutcome, SandboxHost
from think.sandbox.journal import Journal, JournalEntry
from think.tools.execute.namespaces import Provider, provider_namespace, tool_namespace
from think.tools.execute.state import state_namespace
from think.tools.execute.store import DEFAULT_PAUSED_TTL, ExecutionRecord, ExecutionStore
from think.tools.tool import Tool, ToolContext

if TYPE_CHECKING:
    from think.workspace.workspace import Workspace

log = logging.getLogger("think.execute")

PENDING_INPUT_CHARS = 2_000
_FINAL = frozenset({"completed", "error", "rejected", "expired"})
_RERUN = frozenset({"running", "cancelled"})
"""An execution the process died in, or whose turn was cancelled: run again with its journal."""


class ExecuteRuntime:
    """The executions of one agent (see the module docs)."""

    def __init__(self, store: ExecutionStore, host: SandboxHost, *, tools: Callable[[], Mapping[str, Tool]],
                 workspace: Workspace | None, providers: tuple[Provider, ...] = (), agent: Any = None) -> None:
        self.store = store
        self.host = host
        self._tools = tools
        self.workspace = workspace
        self.providers = providers
        self.agent = agent
        self._active: set[str] = set()
        """Executions being continued in this process."""
        self.on_outcome: Callable[[str | None, dict[str, Any]], Any] | None = None
        """Called with (tool_call_id, result) when an approved or rejected execution ends."""

    # ---- namespaces --------------------------------------------------------------------------

    def namespaces(self, execution_id: str = "") -> tuple[dict[str, dict[str, HostFunction]], dict[str, Tool]]:
        counter = iter(range(1_000_000))

        def context(tool_name: str, _: str = "") -> ToolContext:
            return ToolContext(tool_call_id=f"{execution_id}.{next(counter)}", tool_name=tool_name, agent=self.agent)

        spaces: dict[str, dict[str, HostFunction]] = {}
        functions, exposed = tool_namespace(self._tools(), context)
        if functions:
            spaces["tools"] = functions
        if self.workspace is not None:
            spaces["state"] = state_namespace(self.workspace)
        for provider in self.providers:
            spaces[provider.name] = provider_namespace(provider)
        return spaces, exposed

    # ---- running -----------------------------------------------------------------------------

    async def run(self, code: str, *, tool_call_id: str | None = None, inputs: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
        """Run `code` (or re-run the interrupted execution of `tool_call_id` against its journal)."""
        record = self.store.for_call(tool_call_id) if tool_call_id else None
        if record is not None and record.status not in _RERUN:
            return result_of(record, self.store.journal(record.id))  # already settled: the same answer
        if record is not None:  # the process died during it, or its turn was cancelled
            execution_id, code = record.id, record.code
            replay = self.store.journal(execution_id)
            log.info("re-running execution %s against its journal of %d calls", execution_id, len(replay))
        else:
            execution_id, replay = f"exec_{uuid.uuid4().hex[:16]}", []
            self.store.create(execution_id, code, tool_call_id)
        journal = self._journal(execution_id, replay)
        spaces, _ = self.namespaces(execution_id)
        try:
            outcome = await self.host.run(code, spaces, journal=journal, seed=execution_id, inputs=inputs)
        except BaseException:  # cancelled with its turn (a recovery may still run the call again)
            self.store.finish(execution_id, "cancelled", error="CancelledError: the turn was cancelled")
            raise
        return self._settle(execution_id, outcome, spaces)

    def _journal(self, execution_id: str, replay: list[JournalEntry]) -> Journal:
        def write(entry: JournalEntry) -> None:
            self.store.add_call(execution_id, entry)

        return Journal(replay, on_entry=write, on_start=write)

    def _settle(self, execution_id: str, outcome: RunOutcome, spaces: Namespaces) -> dict[str, Any]:
        pending = None
        if outcome.pending is not None:
            function = spaces.get(outcome.pending.namespace, {}).get(outcome.pending.method)
            pending = {"namespace": outcome.pending.namespace, "method": outcome.pending.method,
                       "args": outcome.pending.args, "seq": len(outcome.journal),
                       "description": function.description if function is not None else ""}
        self.store.finish(execution_id, outcome.status, value=outcome.value, error=outcome.error,
                          stdout=outcome.stdout, duration=outcome.duration, pending=pending, snapshot=outcome.snapshot)
        record = self.store.get(execution_id)
        assert record is not None
        return result_of(record, outcome.journal)

    # ---- approvals ---------------------------------------------------------------------------

    def pending_executions(self) -> list[dict[str, Any]]:
        """Paused executions, newest first: `{execution_id, pending, code, paused_at}`."""
        return [{"execution_id": r.id, "tool_call_id": r.tool_call_id, "pending": self._pending_view(r),
                 "code": r.code, "paused_at": r.updated_at} for r in self.store.with_status("paused")]

    async def approve(self, execution_id: str) -> dict[str, Any]:
        """Run the pending call and continue the code from its snapshot. Once only: an execution
        that is not paused (approved, rejected, expired, unknown) gives `status: "error"`.

        The execution is `resuming` until it ends; if the process dies meanwhile, the next start
        continues it (`resume_interrupted`): the approval stands, and what completed is replayed."""
        if not self.store.claim(execution_id, "resuming"):
            return self._not_pending(execution_id)
        return await self._continue(execution_id)

    async def _continue(self, execution_id: str) -> dict[str, Any]:
        record = self.store.get(execution_id)
        assert record is not None and record.snapshot is not None and record.pending is not None
        self._active.add(execution_id)
        try:
            entries = self.store.journal(execution_id)
            journal = self._journal(execution_id, entries)
            # Calls before the pause are behind the snapshot; later ones (a crash after approval)
            # are replayed from the journal as the code reaches them again.
            journal.entries = entries[: int(record.pending.get("seq", len(entries)))]
            spaces, _ = self.namespaces(execution_id)
            pending = PendingCall(record.pending["namespace"], record.pending["method"], record.pending["args"])
            outcome = await self.host.resume(record.snapshot, spaces, "approved", journal=journal, pending=pending)
            result = self._settle(execution_id, outcome, spaces)
        finally:
            self._active.discard(execution_id)
        return await self._resolved(record, result)

    def interrupted(self) -> list[str]:
        """Approved executions a dead process was continuing (none of them runs here)."""
        return [r.id for r in self.store.with_status("resuming") if r.id not in self._active]

    async def resume_interrupted(self) -> list[dict[str, Any]]:
        """Continue every approved execution a dead process left `resuming`."""
        results = []
        for execution_id in self.interrupted():
            log.info("continuing approved execution %s after a restart", execution_id)
            results.append(await self._continue(execution_id))
        return results

    async def reject(self, execution_id: str, reason: str | None = None) -> dict[str, Any]:
        """End a paused execution without running its pending call."""
        if not self.store.claim(execution_id, "rejected"):
            return self._not_pending(execution_id)
        record = self.store.get(execution_id)
        assert record is not None
        call = _qualified(record.pending)
        error = f"PermissionError: the call {call} was rejected" + (f": {reason}" if reason else "")
        self.store.finish(execution_id, "rejected", error=error, stdout=record.stdout)
        settled = self.store.get(execution_id)
        assert settled is not None
        return await self._resolved(settled, result_of(settled, self.store.journal(execution_id)))

    async def _resolved(self, record: ExecutionRecord, result: dict[str, Any]) -> dict[str, Any]:
        if self.on_outcome is not None:
            try:
                await self.on_outcome(record.tool_call_id, result)
            except Exception:
                log.exception("could not hand the outcome of execution %s to the chat", record.id)
        return result

    def expire_paused(self, older_than: float = DEFAULT_PAUSED_TTL) -> list[str]:
        """Reclaim executions paused for more than `older_than` seconds (their snapshots are
        dropped); the ids expired."""
        expired = []
        for record in self.store.with_status("paused", older_than=older_than):
            if self.store.claim(record.id, "expired"):
                self.store.finish(record.id, "expired", error="the execution waited too long for approval "
                                  "and expired", stdout=record.stdout)
                expired.append(record.id)
        return expired

    def _not_pending(self, execution_id: str) -> dict[str, Any]:
        record = self.store.get(execution_id)
        why = "unknown" if record is None else f"already {record.status}"
        return {"status": "error", "ok": False, "execution_id": execution_id,
                "error": f"execution {execution_id!r} is not waiting for approval ({why})"}

    def _pending_view(self, record: ExecutionRecord) -> dict[str, Any] | None:
        if record.pending is None:
            return None
        return pending_view(record.pending, self.namespaces(record.id)[0])

    # ---- audit and snippets ------------------------------------------------------------------

    def executions(self, limit: int = 20) -> list[dict[str, Any]]:
        """The newest executions: code, status, journal, value or error, duration."""
        out = []
        for record in self.store.recent(limit):
            entry = result_of(record, self.store.journal(record.id))
            entry.update(code=record.code, ms=round(record.duration * 1000, 3), created_at=record.created_at,
                         journal=[e.to_json() for e in self.store.journal(record.id)])
            out.append(entry)
        return out

    def save_snippet(self, name: str, *, execution_id: str | None = None, code: str | None = None,
                     description: str = "") -> dict[str, Any]:
        """Store a program under `name` (from an execution or as code); `execute(snippet=name)`
        runs it again, with `args` bound to the arguments it is given."""
        if not name.isidentifier():
            raise ValueError(f"snippet name {name!r}: use letters, digits and '_'")
        if (execution_id is None) == (code is None):
            raise ValueError("give exactly one of execution_id and code")
        if execution_id is not None:
            record = self.store.get(execution_id)
            if record is None:
                raise ValueError(f"no execution {execution_id!r}")
            code = record.code
        assert code is not None
        self.store.save_snippet(name, code, description)
        return {"name": name, "description": description}


def pending_view(pending: dict[str, Any], spaces: Namespaces) -> dict[str, Any]:
    """`{tool, input, description}` of a pending call, its input cut for the transcript."""
    function = spaces.get(pending["namespace"], {}).get(pending["method"])
    description = function.description if function is not None else ""
    return {"tool": _qualified(pending), "input": _cut(pending.get("args") or {}),
            "description": description or f"{_qualified(pending)} needs your approval"}


def result_of(record: ExecutionRecord, journal: list[JournalEntry]) -> dict[str, Any]:
    """The tool result for an execution, as the model sees it."""
    base: dict[str, Any] = {"execution_id": record.id, "host_calls": len(journal), "stdout": record.stdout}
    if record.status == "paused" and record.pending is not None:
        return {"status": "paused", "ok": False, **base, "pending": {
            "tool": _qualified(record.pending), "input": _cut(record.pending.get("args") or {}),
            "description": record.pending.get("description") or f"{_qualified(record.pending)} needs approval"}}
    if record.status == "completed":
        return {"status": "completed", "ok": True, "value": record.value, **base}
    return {"status": record.status, "ok": False, "value": None, **base, "error": record.error or record.status}


def _qualified(pending: dict[str, Any] | None) -> str:
    return f"{pending['namespace']}.{pending['method']}" if pending else "?"


def _cut(args: dict[str, Any]) -> Any:
    text = json.dumps(args, ensure_ascii=False)
    return args if len(text) <= PENDING_INPUT_CHARS else text[:PENDING_INPUT_CHARS] + "… (truncated)"


__all__ = ["DEFAULT_PAUSED_TTL", "ExecuteRuntime", "HostCallRefused", "pending_view", "result_of"]
