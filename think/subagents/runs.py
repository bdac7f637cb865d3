"""Retained agent-tool runs: a parent keeps the `agent-tool-event` frames of its recent child runs.

A client that connects later (a reload, a second tab) gets them again, each with `"replay": true`
and its original `sequence`, before the live ones, so `useAgentToolEvents` shows every run of the
conversation and dedupes the overlap with a run that is still streaming (reference §2.9).

Events are kept in the parent's SQLite. Lifecycle events (`started`, `finished`, `error`,
`aborted`) are written at once; chunks wait in memory and go in one statement with the next
lifecycle event, every `FLUSH_CHUNKS` chunks, or before a replay, so a run's streaming costs no
write per token. Chunks over `MAX_STORED_CHUNK_BYTES` are sent live but not kept. The newest
`keep_runs` runs are kept; clearing the chat (`Think.clear_messages`) forgets them all.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator

import orjson

from think.messages import JSONObject
from think.protocol.payloads import agent_tool_event
from think.storage import Database, migration
from think.stream.fanout import AgentToolEvent, TurnEvent

log = logging.getLogger("think.subagents")

FLUSH_CHUNKS = 64
MAX_STORED_CHUNK_BYTES = 64 * 1024
DEFAULT_KEEP_RUNS = 20


@migration("think.subagents.002_agent_tool_events")
def _m002(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_agent_tool_events (
            run_id              TEXT NOT NULL,
            sequence            INTEGER NOT NULL,
            parent_tool_call_id TEXT,
            event               TEXT NOT NULL,  -- JSON, the frame's `event`
            PRIMARY KEY (run_id, sequence)
        )""")


MIGRATIONS = [_m002]


class AgentToolRuns:
    """The retained runs of one parent agent (see the module docstring)."""

    def __init__(self, db: Database, *, keep_runs: int = DEFAULT_KEEP_RUNS) -> None:
        self.db = db
        self.keep_runs = keep_runs
        self._pending: list[tuple[str, int, str | None, str]] = []

    async def on_event(self, event: TurnEvent) -> None:
        """The fan-out listener: keep agent-tool events."""
        if isinstance(event, AgentToolEvent):
            self.keep(event)

    def keep(self, event: AgentToolEvent) -> None:
        body = event.event
        run_id, kind = body.get("runId"), body.get("kind")
        if not isinstance(run_id, str):
            return
        encoded = orjson.dumps(body).decode()
        if kind == "chunk" and len(encoded) > MAX_STORED_CHUNK_BYTES:
            return  # sent live, not kept
        self._pending.append((run_id, event.sequence, event.parent_tool_call_id, encoded))
        if kind != "chunk" or len(self._pending) >= FLUSH_CHUNKS:
            self.flush()
            if kind in ("finished", "error", "aborted", "interrupted"):
                self._prune()

    def next_sequence(self, run_id: str) -> int:
        """The sequence the next event of `run_id` takes: a run asked again (a recovery re-attaching
        to it) goes on numbering after what clients already have."""
        stored = self.db.value("SELECT max(sequence) FROM think_agent_tool_events WHERE run_id = ?", run_id)
        top = max([-1 if stored is None else int(stored), *(seq for run, seq, _, _ in self._pending if run == run_id)])
        return top + 1

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        if not pending:
            return
        try:
            with self.db.transaction() as db:
                db.connection.executemany(
                    "INSERT OR REPLACE INTO think_agent_tool_events (run_id, sequence, parent_tool_call_id, event) "
                    "VALUES (?, ?, ?, ?)", pending)
        except sqlite3.Error:
            log.exception("could not keep %d agent-tool events; later clients will not see them", len(pending))

    def frames(self) -> Iterator[JSONObject]:
        """Every retained event as an `agent-tool-event` frame with `"replay": true`, runs in the
        order they started, each run's events in sequence."""
        self.flush()
        rows = self.db.sql(
            "SELECT e.sequence, e.parent_tool_call_id, e.event FROM think_agent_tool_events e "
            "JOIN (SELECT run_id, min(rowid) AS first FROM think_agent_tool_events GROUP BY run_id) r "
            "ON r.run_id = e.run_id ORDER BY r.first, e.sequence")
        for row in rows:
            yield agent_tool_event(row["sequence"], orjson.loads(row["event"]), row["parent_tool_call_id"], replay=True)

    def clear(self) -> None:
        self._pending.clear()
        self.db.sql("DELETE FROM think_agent_tool_events")

    def _prune(self) -> None:
        self.db.sql(
            "DELETE FROM think_agent_tool_events WHERE run_id NOT IN (SELECT run_id FROM think_agent_tool_events "
            "GROUP BY run_id ORDER BY min(rowid) DESC LIMIT ?)", self.keep_runs)
