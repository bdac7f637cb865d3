"""The idempotency ledger: an action's side effect runs at most once per key.

A row per key `action:<name>:<key>` (an action without `idempotency_key` uses the tool call id).
`begin` writes it `pending` before `execute` runs, in the same transaction that checks for it;
`settle` stores the JSON result; `release` deletes the row when `execute` failed, so a retry runs
cleanly. A key that is already settled answers with its stored result without running. A key
that is `pending` was started and not finished — by a call still running in this process (the
second caller waits for the first and gets its result), or by a process that died during it:
that one is not run blindly again (`ActionPendingError`), except that a row with an explicit key
(the author's claim that re-running that key is safe) is reclaimed once older than the lease.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from think.storage.database import Database
from think.storage.migrations import migration

DEFAULT_LEASE = 300.0
"""Seconds after which a stale pending row with an explicit key may run again."""
SETTLED_RETENTION = 30 * 86400.0
PENDING_RETENTION = 90 * 86400.0


@migration("think.actions.001_ledger")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_action_ledger (
            key           TEXT PRIMARY KEY,      -- action:<name>:<key>
            action        TEXT NOT NULL,
            status        TEXT NOT NULL,         -- pending | settled
            explicit      INTEGER NOT NULL,      -- 1: the action gave the key (reclaimable after the lease)
            input         TEXT NOT NULL,         -- fingerprint of the input it ran with
            tool_call_id  TEXT,
            result        TEXT,                  -- JSON, once settled
            created_at    REAL NOT NULL,
            updated_at    REAL NOT NULL
        )""")
    conn.execute("CREATE INDEX think_action_ledger_age ON think_action_ledger (status, updated_at)")


@dataclass(frozen=True, slots=True)
class Begin:
    """What `begin` found: run it (`run`), its stored result (`replay`), or it cannot run now."""

    verdict: Literal["run", "replay", "pending", "conflict"]
    result: Any = None
    reclaimed: bool = False


class ActionLedger:
    """One agent's ledger rows (see the module docs)."""

    def __init__(self, db: Database, *, clock: Callable[[], float]) -> None:
        self.db = db
        self.clock = clock
        self._running: dict[str, asyncio.Future[Any]] = {}
        """Keys executing in this process: a concurrent duplicate waits for the first's result."""

    def begin(self, key: str, *, action: str, fingerprint: str, explicit: bool, tool_call_id: str,
              lease: float | None) -> Begin:
        now = self.clock()
        with self.db.transaction():
            row = self.db.one("SELECT status, explicit, input, result, updated_at FROM think_action_ledger "
                              "WHERE key = ?", key)
            if row is None:
                self.db.sql("INSERT INTO think_action_ledger (key, action, status, explicit, input, tool_call_id, "
                            "created_at, updated_at) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?)",
                            key, action, int(explicit), fingerprint, tool_call_id, now, now)
                return Begin("run")
            if explicit and row["input"] != fingerprint:
                return Begin("conflict")
            if row["status"] == "settled":
                return Begin("replay", orjson.loads(row["result"]))
            if (explicit and row["explicit"] and lease is not None and key not in self._running
                    and now - row["updated_at"] >= lease):
                self.db.sql("UPDATE think_action_ledger SET updated_at = ?, tool_call_id = ? WHERE key = ?",
                            now, tool_call_id, key)
                return Begin("run", reclaimed=True)
            return Begin("pending")

    def running(self, key: str) -> asyncio.Future[Any] | None:
        return self._running.get(key)

    def mark_running(self, key: str) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        return future

    def settle(self, key: str, result: Any) -> None:
        self.db.sql("UPDATE think_action_ledger SET status = 'settled', result = ?, updated_at = ? WHERE key = ?",
                    orjson.dumps(result).decode(), self.clock(), key)
        self._finish(key, result)

    def release(self, key: str, result: Any = None) -> None:
        """`execute` failed: forget the key, so the next call runs it cleanly."""
        self.db.sql("DELETE FROM think_action_ledger WHERE key = ? AND status = 'pending'", key)
        self._finish(key, result)

    def _finish(self, key: str, result: Any) -> None:
        future = self._running.pop(key, None)
        if future is not None and not future.done():
            future.set_result(result)

    def row(self, key: str) -> dict[str, Any] | None:
        row = self.db.one("SELECT * FROM think_action_ledger WHERE key = ?", key)
        return dict(row) if row is not None else None

    def sweep(self, *, settled: float = SETTLED_RETENTION, pending: float = PENDING_RETENTION,
              limit: int = 500) -> int:
        """Delete rows older than their retention (at most `limit`); the number deleted."""
        now = self.clock()
        rows = self.db.sql("SELECT key FROM think_action_ledger WHERE (status = 'settled' AND updated_at < ?) "
                           "OR (status = 'pending' AND updated_at < ?) LIMIT ?", now - settled, now - pending, limit)
        keys = [r["key"] for r in rows if r["key"] not in self._running]
        if keys:
            self.db.execute_many("DELETE FROM think_action_ledger WHERE key = ?", [(k,) for k in keys])
        return len(keys)


MIGRATIONS = [_m001]
