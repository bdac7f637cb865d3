"""Executions, their journals and saved snippets, in the agent's SQLite database.

One row per execution (code, status, outcome, the snapshot of a paused run) and one row per
completed host call, written as the call returns: a process killed mid-run leaves the journal of
everything that finished, which the re-run replays instead of calling again. Status moves
`running → completed | error | paused`, `paused → running` (approved, exactly once: the update
is conditional on the status) or `paused → rejected | expired`.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from think.sandbox.journal import JournalEntry
from think.storage.database import Database
from think.storage.migrations import migration

DEFAULT_PAUSED_TTL = 24 * 3600.0
"""Seconds after which `expire_paused()` reclaims a paused execution by default."""


@migration("think.execute.001_executions")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_executions (
            id            TEXT PRIMARY KEY,
            tool_call_id  TEXT,                  -- the `execute` call that started it
            code          TEXT NOT NULL,
            status        TEXT NOT NULL,         -- running | completed | error | paused | rejected | expired
            value         TEXT,                  -- JSON of the final value
            error         TEXT,
            stdout        TEXT NOT NULL DEFAULT '',
            pending       TEXT,                  -- JSON {namespace, method, args} of a paused run
            snapshot      BLOB,                  -- the interpreter dumped at that call
            ms            REAL NOT NULL DEFAULT 0,
            created_at    REAL NOT NULL,
            updated_at    REAL NOT NULL
        )""")
    conn.execute("CREATE INDEX think_executions_status ON think_executions (status, updated_at)")
    conn.execute("CREATE INDEX think_executions_call ON think_executions (tool_call_id)")
    conn.execute("""
        CREATE TABLE think_execution_calls (
            execution_id  TEXT NOT NULL,
            seq           INTEGER NOT NULL,
            entry         TEXT NOT NULL,         -- JSON of the JournalEntry
            PRIMARY KEY (execution_id, seq)
        )""")
    conn.execute("""
        CREATE TABLE think_execution_snippets (
            name          TEXT PRIMARY KEY,
            code          TEXT NOT NULL,
            description   TEXT NOT NULL DEFAULT '',
            created_at    REAL NOT NULL
        )""")


MIGRATIONS = [_m001]


@dataclass(frozen=True, slots=True)
class ExecutionRecord:
    id: str
    tool_call_id: str | None
    code: str
    status: str
    value: Any
    error: str | None
    stdout: str
    pending: dict[str, Any] | None
    snapshot: bytes | None
    duration: float
    """Seconds the execution ran (stored as milliseconds, `ms`)."""
    created_at: float
    updated_at: float


class ExecutionStore:
    """Reads and writes the execution tables (see the module docs)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def create(self, execution_id: str, code: str, tool_call_id: str | None) -> None:
        now = time.time()
        self.db.sql("INSERT INTO think_executions (id, tool_call_id, code, status, created_at, updated_at) "
                    "VALUES (?, ?, ?, 'running', ?, ?)", execution_id, tool_call_id, code, now, now)

    def add_call(self, execution_id: str, entry: JournalEntry) -> None:
        self.db.sql("INSERT OR REPLACE INTO think_execution_calls (execution_id, seq, entry) VALUES (?, ?, ?)",
                    execution_id, entry.seq, json.dumps(entry.to_json()))

    def journal(self, execution_id: str) -> list[JournalEntry]:
        rows = self.db.sql("SELECT entry FROM think_execution_calls WHERE execution_id = ? ORDER BY seq",
                           execution_id)
        return [JournalEntry.from_json(json.loads(r["entry"])) for r in rows]

    def finish(self, execution_id: str, status: str, *, value: Any = None, error: str | None = None,
               stdout: str = "", duration: float = 0.0, pending: dict[str, Any] | None = None,
               snapshot: bytes | None = None) -> None:
        self.db.sql("UPDATE think_executions SET status = ?, value = ?, error = ?, stdout = ?, ms = ms + ?, "
                    "pending = ?, snapshot = ?, updated_at = ? WHERE id = ?",
                    status, json.dumps(value), error, stdout, duration * 1000, json.dumps(pending) if pending else None,
                    snapshot, time.time(), execution_id)

    def claim(self, execution_id: str, to: str) -> bool:
        """Move a paused execution to `to` (running, rejected, expired); True for the one caller
        that did it: a second approve or an approve after a reject finds it no longer paused."""
        with self.db.transaction():
            row = self.db.one("SELECT status FROM think_executions WHERE id = ?", execution_id)
            if row is None or row["status"] != "paused":
                return False
            self.db.sql("UPDATE think_executions SET status = ?, updated_at = ? WHERE id = ?",
                        to, time.time(), execution_id)
        return True

    def get(self, execution_id: str) -> ExecutionRecord | None:
        row = self.db.one("SELECT * FROM think_executions WHERE id = ?", execution_id)
        return _record(row) if row is not None else None

    def for_call(self, tool_call_id: str) -> ExecutionRecord | None:
        row = self.db.one("SELECT * FROM think_executions WHERE tool_call_id = ? ORDER BY created_at DESC LIMIT 1",
                          tool_call_id)
        return _record(row) if row is not None else None

    def with_status(self, status: str, *, older_than: float | None = None) -> list[ExecutionRecord]:
        cutoff = time.time() - older_than if older_than is not None else None
        rows = self.db.sql("SELECT * FROM think_executions WHERE status = ? AND (? IS NULL OR updated_at < ?) "
                           "ORDER BY updated_at DESC", status, cutoff, cutoff)
        return [_record(r) for r in rows]

    def recent(self, limit: int) -> list[ExecutionRecord]:
        rows = self.db.sql("SELECT * FROM think_executions ORDER BY created_at DESC, rowid DESC LIMIT ?",
                           max(0, limit))
        return [_record(r) for r in rows]

    def save_snippet(self, name: str, code: str, description: str = "") -> None:
        self.db.sql("INSERT OR REPLACE INTO think_execution_snippets (name, code, description, created_at) "
                    "VALUES (?, ?, ?, ?)", name, code, description, time.time())

    def snippet(self, name: str) -> tuple[str, str] | None:
        row = self.db.one("SELECT code, description FROM think_execution_snippets WHERE name = ?", name)
        return (row["code"], row["description"]) if row is not None else None

    def snippets(self) -> list[dict[str, str]]:
        return [{"name": r["name"], "description": r["description"]}
                for r in self.db.sql("SELECT name, description FROM think_execution_snippets ORDER BY name")]


def _record(row: Any) -> ExecutionRecord:
    return ExecutionRecord(
        id=row["id"], tool_call_id=row["tool_call_id"], code=row["code"], status=row["status"],
        value=json.loads(row["value"]) if row["value"] is not None else None, error=row["error"],
        stdout=row["stdout"], pending=json.loads(row["pending"]) if row["pending"] else None,
        snapshot=row["snapshot"], duration=row["ms"] / 1000, created_at=row["created_at"], updated_at=row["updated_at"])
