"""The submission ledger: one row per durably accepted turn, in the agent's own SQLite.

A row is written before the model runs and moves `pending → running → completed | error |
aborted | skipped` (or straight from `pending` to `aborted`/`skipped`). `seq` orders execution
(FIFO). The submitted messages are stored with their ids, so applying them twice is a no-op.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from think.messages import JSONObject, Message
from think.storage import Database, Row, migration

SubmissionStatus = Literal["pending", "running", "completed", "aborted", "skipped", "error"]
STATUSES: tuple[SubmissionStatus, ...] = ("pending", "running", "completed", "aborted", "skipped", "error")
TERMINAL: frozenset[str] = frozenset({"completed", "aborted", "skipped", "error"})


@migration("think.submissions.001_submissions")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_submissions (
            seq             INTEGER PRIMARY KEY AUTOINCREMENT,
            id              TEXT NOT NULL UNIQUE,
            idempotency_key TEXT UNIQUE,
            status          TEXT NOT NULL,
            messages        BLOB NOT NULL,      -- JSON array of UIMessages
            metadata        BLOB,               -- JSON
            session_id      TEXT NOT NULL DEFAULT '',
            error           TEXT,
            recovery        TEXT,               -- 'continue': finish an interrupted reply
            created_at      REAL NOT NULL,
            started_at      REAL,
            completed_at    REAL
        )""")
    conn.execute("CREATE INDEX think_submissions_status ON think_submissions (status, seq)")


MIGRATIONS = [_m001]


@dataclass(frozen=True, kw_only=True)
class Submission:
    """A submission record (`submit_messages`, `inspect_submission`, `list_submissions`)."""

    submission_id: str
    status: SubmissionStatus
    idempotency_key: str | None = None
    request_id: str | None = None
    """The turn's request id (the submission id), once it started."""
    error: str | None = None
    metadata: Any = None
    created_at: float
    started_at: float | None = None
    completed_at: float | None = None
    accepted: bool = False
    """True only in the answer to the `submit_messages` call that created it."""
    message_ids: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    def to_json(self) -> JSONObject:
        """The record with the original's camelCase field names (for RPC answers)."""
        out: JSONObject = {"submissionId": self.submission_id, "status": self.status, "createdAt": self.created_at,
                           "accepted": self.accepted}
        for key, value in (("idempotencyKey", self.idempotency_key), ("requestId", self.request_id),
                           ("error", self.error), ("metadata", self.metadata), ("startedAt", self.started_at),
                           ("completedAt", self.completed_at)):
            if value is not None:
                out[key] = value
        return out


def _submission(row: Row, *, accepted: bool = False) -> Submission:
    messages = orjson.loads(row["messages"])
    return Submission(
        submission_id=row["id"], status=row["status"], idempotency_key=row["idempotency_key"],
        request_id=row["id"] if row["started_at"] is not None else None, error=row["error"],
        metadata=orjson.loads(row["metadata"]) if row["metadata"] is not None else None,
        created_at=row["created_at"], started_at=row["started_at"], completed_at=row["completed_at"],
        accepted=accepted, message_ids=tuple(str(m.get("id")) for m in messages if isinstance(m, dict)))


class SubmissionStore:
    """Reads and writes the `think_submissions` table."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, submission_id: str) -> Submission | None:
        row = self.db.one("SELECT * FROM think_submissions WHERE id = ?", submission_id)
        return _submission(row) if row else None

    def by_key(self, key: str) -> Submission | None:
        row = self.db.one("SELECT * FROM think_submissions WHERE idempotency_key = ?", key)
        return _submission(row) if row else None

    def insert(self, submission_id: str, messages: Sequence[Message], *, key: str | None, metadata: Any,
               session_id: str) -> Submission:
        now = time.time()
        self.db.sql("INSERT INTO think_submissions (id, idempotency_key, status, messages, metadata, session_id, "
                    "created_at) VALUES (?, ?, 'pending', ?, ?, ?, ?)", submission_id, key,
                    orjson.dumps([m.to_json() for m in messages]),
                    orjson.dumps(metadata) if metadata is not None else None, session_id, now)
        row = self.db.one("SELECT * FROM think_submissions WHERE id = ?", submission_id)
        assert row is not None
        return _submission(row, accepted=True)

    def messages(self, submission_id: str) -> tuple[str, list[Message]]:
        """The session id and the messages of a submission."""
        row = self.db.one("SELECT session_id, messages FROM think_submissions WHERE id = ?", submission_id)
        if row is None:
            return "", []
        return row["session_id"], [Message.from_json(m) for m in orjson.loads(row["messages"])]

    def next_pending(self, skip: Collection[str] = ()) -> Submission | None:
        """The oldest pending submission, except those in `skip` (being steered into a turn)."""
        if skip:
            row = self.db.one(f"SELECT * FROM think_submissions WHERE status = 'pending' AND id NOT IN "
                              f"({','.join('?' * len(skip))}) ORDER BY seq LIMIT 1", *skip)
        else:
            row = self.db.one("SELECT * FROM think_submissions WHERE status = 'pending' ORDER BY seq LIMIT 1")
        return _submission(row) if row else None

    def count(self, *statuses: str) -> int:
        marks = ",".join("?" * len(statuses))
        return int(self.db.value(f"SELECT count(*) FROM think_submissions WHERE status IN ({marks})", *statuses))

    def select(self, statuses: Sequence[str] | None = None, limit: int | None = None) -> list[Submission]:
        query, params = "SELECT * FROM think_submissions", list[Any]()
        if statuses:
            query += f" WHERE status IN ({','.join('?' * len(statuses))})"
            params.extend(statuses)
        query += " ORDER BY seq"
        if limit is not None:
            query += " LIMIT ?"
            params.append(max(0, int(limit)))
        return [_submission(row) for row in self.db.sql(query, *params)]

    def start(self, submission_id: str) -> bool:
        """`pending → running`; False if it is not pending any more (cancelled meanwhile)."""
        self.db.sql("UPDATE think_submissions SET status = 'running', started_at = ?, error = NULL "
                    "WHERE id = ? AND status = 'pending'", time.time(), submission_id)
        return bool(self.db.value("SELECT changes()"))

    def finish(self, submission_id: str, status: SubmissionStatus, error: str | None = None) -> bool:
        """Record a terminal status (once: a finished submission keeps its first outcome)."""
        self.db.sql("UPDATE think_submissions SET status = ?, error = ?, completed_at = ? "
                    "WHERE id = ? AND status IN ('pending', 'running')", status, error, time.time(), submission_id)
        return bool(self.db.value("SELECT changes()"))

    def requeue(self, submission_id: str, *, recovery: str | None = None) -> None:
        """Back to `pending` after a restart; `recovery="continue"` continues its partial reply."""
        self.db.sql("UPDATE think_submissions SET status = 'pending', started_at = NULL, recovery = ? WHERE id = ?",
                    recovery, submission_id)

    def recovery(self, submission_id: str) -> str | None:
        value = self.db.value("SELECT recovery FROM think_submissions WHERE id = ?", submission_id)
        return str(value) if value is not None else None

    def running(self) -> list[Submission]:
        return [_submission(r) for r in self.db.sql("SELECT * FROM think_submissions WHERE status = 'running' "
                                                    "ORDER BY seq")]

    def delete(self, submission_id: str) -> bool:
        marks = ",".join("?" * len(TERMINAL))
        self.db.sql(f"DELETE FROM think_submissions WHERE id = ? AND status IN ({marks})", submission_id, *TERMINAL)
        return bool(self.db.value("SELECT changes()"))

    def delete_many(self, statuses: Sequence[str] | None, completed_before: float | None,
                    limit: int | None) -> int:
        wanted = [s for s in (statuses or TERMINAL) if s in TERMINAL]
        if not wanted:
            return 0
        query = f"SELECT seq FROM think_submissions WHERE status IN ({','.join('?' * len(wanted))})"
        params: list[Any] = list(wanted)
        if completed_before is not None:
            query += " AND completed_at < ?"
            params.append(completed_before)
        query += " ORDER BY seq"
        if limit is not None:
            query += " LIMIT ?"
            params.append(max(0, int(limit)))
        seqs = [row["seq"] for row in self.db.sql(query, *params)]
        if seqs:
            self.db.execute_many("DELETE FROM think_submissions WHERE seq = ?", [(s,) for s in seqs])
        return len(seqs)
