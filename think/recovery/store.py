"""`FiberStore`: the durable record of every running chat turn (a *fiber*), in the agent's SQLite.

A row is written after the turn's new messages are saved and before the model runs, and deleted
when the turn ends (completed, failed, aborted). A row that survives a restart is a turn the
process did not finish: `think.recovery.engine` recovers it.

Tool calls need no table of their own: the resumable stream buffer writes a call's
`tool-input-available` chunk before the tool runs and its output chunk as soon as it has one,
each in its own commit (see `think.stream.resumable`), so the buffer is the ledger recovery
reads: a call with an output is settled (never run again), one without was in flight.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import Any

import orjson

from think.messages import JSONObject
from think.storage import Database, migration, rebuild_table


@migration("think.recovery.001_fibers")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_chat_fibers (
            request_id      TEXT PRIMARY KEY,
            root_request_id TEXT NOT NULL,          -- the turn the incident started with
            session_id      TEXT NOT NULL,
            continuation    INTEGER NOT NULL,
            attempt         INTEGER NOT NULL,       -- 0 for the original turn, n for the n-th recovery
            latest_user_id  TEXT,
            last_body       TEXT,                   -- JSON
            client_tools    TEXT,                   -- JSON [{name, description, parameters}]
            stash           TEXT,                   -- JSON, Think.stash()
            incident_at     REAL NOT NULL,          -- when the root turn started
            progress_at     REAL NOT NULL,          -- last forward progress of the incident
            work            INTEGER NOT NULL,       -- content/tool units streamed by earlier attempts
            counted         INTEGER NOT NULL DEFAULT 0, -- this row's own stream is already in `work`
            created_at      REAL NOT NULL
        )""")


@migration("think.recovery.002_keyed_fibers")
def _m002(conn: sqlite3.Connection) -> None:
    # WITHOUT ROWID: a fiber is one b-tree entry keyed by its request id, not a row plus an index
    # entry, so the commits that store and remove it (two a turn) change one page, not two.
    rebuild_table(conn, "think_chat_fibers", lambda sql: f"{sql} WITHOUT ROWID")


MIGRATIONS = [_m001, _m002]


@dataclass(frozen=True, slots=True)
class Fiber:
    request_id: str
    root_request_id: str
    session_id: str
    continuation: bool
    attempt: int
    latest_user_id: str | None
    last_body: JSONObject | None
    client_tools: list[JSONObject]
    stash: Any
    incident_at: float
    progress_at: float
    work: int
    created_at: float
    counted: bool = False


def _load(text: str | None) -> Any:
    return orjson.loads(text) if text else None


class FiberStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def write(self, fiber: Fiber) -> None:
        self.db.sql(
            "INSERT OR REPLACE INTO think_chat_fibers (request_id, root_request_id, session_id, continuation, "
            "attempt, latest_user_id, last_body, client_tools, stash, incident_at, progress_at, work, created_at, "
            "counted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            fiber.request_id, fiber.root_request_id, fiber.session_id, int(fiber.continuation), fiber.attempt,
            fiber.latest_user_id, orjson.dumps(fiber.last_body).decode() if fiber.last_body is not None else None,
            orjson.dumps(fiber.client_tools).decode(),
            orjson.dumps(fiber.stash).decode() if fiber.stash is not None else None,
            fiber.incident_at, fiber.progress_at, fiber.work, fiber.created_at, int(fiber.counted))

    def set_stash(self, request_id: str, data: Any) -> bool:
        text = orjson.dumps(data).decode() if data is not None else None
        self.db.sql("UPDATE think_chat_fibers SET stash = ? WHERE request_id = ?", text, request_id)
        return self.get(request_id) is not None

    def get(self, request_id: str) -> Fiber | None:
        row = self.db.one("SELECT * FROM think_chat_fibers WHERE request_id = ?", request_id)
        return self._fiber(row) if row is not None else None

    def all(self) -> list[Fiber]:
        return [self._fiber(r) for r in self.db.sql("SELECT * FROM think_chat_fibers ORDER BY created_at")]

    def delete(self, request_id: str) -> None:
        self.db.sql("DELETE FROM think_chat_fibers WHERE request_id = ?", request_id)

    def take(self, request_id: str) -> Fiber | None:
        """Delete a fiber and return it (None: there was none); one statement."""
        row = self.db.one("DELETE FROM think_chat_fibers WHERE request_id = ? RETURNING *", request_id)
        return self._fiber(row) if row is not None else None

    def clear(self) -> None:
        self.db.sql("DELETE FROM think_chat_fibers")

    @staticmethod
    def _fiber(row: JSONObject) -> Fiber:
        return Fiber(request_id=row["request_id"], root_request_id=row["root_request_id"],
                     session_id=row["session_id"], continuation=bool(row["continuation"]), attempt=row["attempt"],
                     latest_user_id=row["latest_user_id"], last_body=_load(row["last_body"]),
                     client_tools=_load(row["client_tools"]) or [], stash=_load(row["stash"]),
                     incident_at=row["incident_at"], progress_at=row["progress_at"], work=row["work"],
                     created_at=row["created_at"], counted=bool(row["counted"]))


def now() -> float:
    return time.time()
