"""Actions waiting for a person, in the agent's SQLite: one row per call that asked for approval.

An approval-gated call records the input it asked about (`kind = 'approval-gated'`): when the
approved call runs, what runs must be that input. A durable-pause call parks here
(`kind = 'durable-pause'`) with the grant of the turn that parked it, until `approve_execution`
or `reject_execution`. Status moves `pending → running → settled` (approved, exactly once: the
move out of `pending` is conditional) or `pending → rejected | expired`; `applied` says the
outcome reached the transcript, so a restart between the two writes finishes the second.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from think.storage.database import Database
from think.storage.migrations import migration

DEFAULT_APPROVAL_TTL = 30 * 86400.0
"""Seconds a parked action waits for approval before it expires."""


@migration("think.actions.002_pending_approvals")
def _m002(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_action_approvals (
            execution_id  TEXT PRIMARY KEY,
            kind          TEXT NOT NULL,         -- approval-gated | durable-pause
            tool_call_id  TEXT NOT NULL,
            request_id    TEXT NOT NULL,
            action        TEXT NOT NULL,
            input         TEXT NOT NULL,         -- JSON of the input asked about
            fingerprint   TEXT NOT NULL,
            descriptor    TEXT NOT NULL,         -- JSON approval descriptor
            grant_json    TEXT,                  -- the parking turn's grant
            status        TEXT NOT NULL,         -- pending | running | settled | rejected | expired
            result        TEXT,                  -- JSON outcome
            applied       INTEGER NOT NULL DEFAULT 0,
            created_at    REAL NOT NULL,
            updated_at    REAL NOT NULL
        )""")
    conn.execute("CREATE UNIQUE INDEX think_action_approvals_call ON think_action_approvals (tool_call_id, kind)")
    conn.execute("CREATE INDEX think_action_approvals_status ON think_action_approvals (status, created_at)")


MIGRATIONS = [_m002]


@dataclass(frozen=True, slots=True)
class Parked:
    execution_id: str
    kind: str
    tool_call_id: str
    request_id: str
    action: str
    input: Any
    fingerprint: str
    descriptor: dict[str, Any]
    grant: Any
    status: str
    result: Any
    applied: bool
    created_at: float
    updated_at: float


def _parked(row: Any) -> Parked:
    return Parked(execution_id=row["execution_id"], kind=row["kind"], tool_call_id=row["tool_call_id"],
                  request_id=row["request_id"], action=row["action"], input=orjson.loads(row["input"]),
                  fingerprint=row["fingerprint"], descriptor=orjson.loads(row["descriptor"]),
                  grant=orjson.loads(row["grant_json"]) if row["grant_json"] else None, status=row["status"],
                  result=orjson.loads(row["result"]) if row["result"] is not None else None,
                  applied=bool(row["applied"]), created_at=row["created_at"], updated_at=row["updated_at"])


class ParkedActions:
    """Reads and writes `think_action_approvals` (see the module docs)."""

    def __init__(self, db: Database, *, clock: Callable[[], float]) -> None:
        self.db = db
        self.clock = clock

    def record(self, *, execution_id: str, kind: str, tool_call_id: str, request_id: str, action: str,
               input: Any, fingerprint: str, descriptor: dict[str, Any], grant: Any) -> Parked:
        """Record a call asking for approval; the row already there for that call wins (a rerun
        of the same call after a crash parks nothing new)."""
        now = self.clock()
        self.db.sql("INSERT OR IGNORE INTO think_action_approvals (execution_id, kind, tool_call_id, request_id, "
                    "action, input, fingerprint, descriptor, grant_json, status, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
                    execution_id, kind, tool_call_id, request_id, action, orjson.dumps(input).decode(), fingerprint,
                    orjson.dumps(descriptor).decode(), orjson.dumps(grant).decode() if grant is not None else None,
                    now, now)
        found = self.for_call(tool_call_id, kind)
        assert found is not None
        return found

    def get(self, execution_id: str) -> Parked | None:
        row = self.db.one("SELECT * FROM think_action_approvals WHERE execution_id = ?", execution_id)
        return _parked(row) if row is not None else None

    def for_call(self, tool_call_id: str, kind: str) -> Parked | None:
        row = self.db.one("SELECT * FROM think_action_approvals WHERE tool_call_id = ? AND kind = ?",
                          tool_call_id, kind)
        return _parked(row) if row is not None else None

    def claim(self, execution_id: str, to: str, *, ttl: float | None = None) -> tuple[bool, str]:
        """Move a pending durable-pause row to `to`; (True, "") for the one caller that did it,
        else (False, why): unknown, already <status>, or expired (moved to `expired` here)."""
        now = self.clock()
        with self.db.transaction():
            row = self.db.one("SELECT status, kind, created_at FROM think_action_approvals WHERE execution_id = ?",
                              execution_id)
            if row is None or row["kind"] != "durable-pause":
                return False, "unknown"
            if row["status"] != "pending":
                return False, f"already {row['status']}"
            if ttl is not None and now - row["created_at"] > ttl:
                self.db.sql("UPDATE think_action_approvals SET status = 'expired', updated_at = ? "
                            "WHERE execution_id = ?", now, execution_id)
                return False, "expired: it waited too long for approval"
            self.db.sql("UPDATE think_action_approvals SET status = ?, updated_at = ? WHERE execution_id = ?",
                        to, now, execution_id)
        return True, ""

    def finish(self, execution_id: str, status: str, result: Any) -> None:
        self.db.sql("UPDATE think_action_approvals SET status = ?, result = ?, updated_at = ? WHERE execution_id = ?",
                    status, orjson.dumps(result).decode(), self.clock(), execution_id)

    def mark_applied(self, execution_id: str) -> None:
        self.db.sql("UPDATE think_action_approvals SET applied = 1 WHERE execution_id = ?", execution_id)

    def pending(self) -> list[Parked]:
        rows = self.db.sql("SELECT * FROM think_action_approvals WHERE kind = 'durable-pause' AND status = 'pending' "
                           "ORDER BY created_at DESC")
        return [_parked(r) for r in rows]

    def unfinished(self) -> list[Parked]:
        """Approved calls a dead process was running, and outcomes not yet in the transcript."""
        rows = self.db.sql("SELECT * FROM think_action_approvals WHERE kind = 'durable-pause' AND "
                           "(status = 'running' OR (status IN ('settled', 'rejected') AND applied = 0)) "
                           "ORDER BY created_at")
        return [_parked(r) for r in rows]
