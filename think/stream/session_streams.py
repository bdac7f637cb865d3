"""`SessionStreams`: the chunks of the running turn of each session other than the root, in SQLite.

The root session's streams (the chat transcript) are buffered for clients that resume
(`think.stream.resumable`). The other sessions (a harness's sessions) have no such clients, but
a harness asks what a session is doing (`HarnessSession.in_flight()`), also after a crash: this
buffer keeps the stream of a session's running turn until that turn ends, and a stream still in
storage when no turn of this process produces it was cut off by a crash (an *orphan*, offered
until the session's next turn starts or the session is reset).

Writes are batched as the resumable buffer's are (`FLUSH_AFTER`, `ROW_CHUNKS`, and at once for tool
calls, their outputs and the end), so a crash loses at most the last `FLUSH_AFTER` seconds of
text. Trusts nothing from clients: it stores what the agent's own turns produce.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import orjson

from think.messages import JSONObject
from think.sessions.session import Session
from think.storage import Database, migration
from think.stream.fanout import ChunkEvent, TurnEvent, TurnFinished, TurnStarted
from think.stream.resumable import _FLUSH_NOW, FLUSH_AFTER, ROW_CHUNKS

if TYPE_CHECKING:
    from think.sessions.manager import Sessions


@migration("think.stream.002_session_streams")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_session_streams (
            request_id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            created_at REAL NOT NULL
        )""")
    conn.execute("CREATE INDEX think_session_streams_session ON think_session_streams (session_id, created_at)")
    conn.execute("""
        CREATE TABLE think_session_stream_chunks (
            id         INTEGER PRIMARY KEY,
            request_id TEXT NOT NULL,
            first_seq  INTEGER NOT NULL,           -- seq of the first chunk in body
            body       TEXT NOT NULL               -- chunk JSON texts joined by "\\n"
        )""")
    conn.execute("CREATE INDEX think_session_stream_chunks_request ON think_session_stream_chunks "
                 "(request_id, first_seq)")


MIGRATIONS = [_m001]


@dataclass(frozen=True, slots=True)
class SessionStream:
    """A session's stream: its request id, its chunks so far, and whether a crash left it."""

    request_id: str
    chunks: tuple[JSONObject, ...]
    orphaned: bool


@dataclass
class _Live:
    session_id: str
    next_seq: int = 0
    pending: list[str] = field(default_factory=list)
    flushed_at: float = 0.0


class SessionStreams:
    """The stream buffer of an agent's sessions other than the root. See the module docstring."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._live: dict[str, _Live] = {}

    def bind(self, sessions: Sessions) -> None:
        """Buffer every session `sessions` opens, and drop a session's streams when it is deleted."""
        sessions.on_open = self.attach
        sessions.on_delete = self.forget

    def attach(self, session: Session) -> None:
        """Buffer the turns of `session` (called once, when the agent opens the session)."""
        if not session.id:
            return
        session_id = session.id

        async def on_event(event: TurnEvent) -> None:
            if event.__class__ is ChunkEvent:
                self._append(event)
            elif isinstance(event, TurnStarted):
                self._start(session_id, event.request_id)
            elif isinstance(event, TurnFinished):
                self._finish(event.request_id)

        session.fanout.subscribe(on_event)

    def current(self, session_id: str) -> SessionStream | None:
        """The stream of the session's running turn, else the one a crash left, else None."""
        for request_id, live in self._live.items():
            if live.session_id == session_id:
                return SessionStream(request_id, self._chunks(request_id), orphaned=False)
        row = self.db.one("SELECT request_id FROM think_session_streams WHERE session_id = ? "
                          "ORDER BY created_at DESC LIMIT 1", session_id)
        if row is None:
            return None
        return SessionStream(row["request_id"], self._chunks(row["request_id"]), orphaned=True)

    def forget(self, session_id: str) -> None:
        """Drop what the session left (it was reset); a running turn's stream stays."""
        running = [r for r, live in self._live.items() if live.session_id == session_id]
        for row in self.db.sql("SELECT request_id FROM think_session_streams WHERE session_id = ?", session_id):
            if row["request_id"] not in running:
                self._delete(row["request_id"])

    # ---- writing ------------------------------------------------------------------------------

    def _start(self, session_id: str, request_id: str) -> None:
        self.forget(session_id)  # an orphan of this session is superseded
        self._delete(request_id)
        self.db.sql("INSERT INTO think_session_streams (request_id, session_id, created_at) VALUES (?, ?, ?)",
                    request_id, session_id, time.time())
        self._live[request_id] = _Live(session_id, flushed_at=time.monotonic())

    def _append(self, event: ChunkEvent) -> None:
        live = self._live.get(event.request_id)
        if live is None:
            return
        live.pending.append(orjson.dumps(event.chunk).decode())
        if (event.chunk.get("type") in _FLUSH_NOW or len(live.pending) >= ROW_CHUNKS
                or time.monotonic() - live.flushed_at >= FLUSH_AFTER):
            self._flush(event.request_id, live)

    def _flush(self, request_id: str, live: _Live) -> None:
        live.flushed_at = time.monotonic()
        if not live.pending:
            return
        self.db.sql("INSERT INTO think_session_stream_chunks (request_id, first_seq, body) VALUES (?, ?, ?)",
                    request_id, live.next_seq, "\n".join(live.pending))
        live.next_seq += len(live.pending)
        live.pending.clear()

    def _finish(self, request_id: str) -> None:
        if self._live.pop(request_id, None) is not None:
            self._delete(request_id)  # the reply is in the session now

    def _delete(self, request_id: str) -> None:
        self.db.sql("DELETE FROM think_session_stream_chunks WHERE request_id = ?", request_id)
        self.db.sql("DELETE FROM think_session_streams WHERE request_id = ?", request_id)

    # ---- reading ------------------------------------------------------------------------------

    def _chunks(self, request_id: str) -> tuple[JSONObject, ...]:
        out: list[JSONObject] = []
        for row in self.db.sql("SELECT body FROM think_session_stream_chunks WHERE request_id = ? "
                               "ORDER BY first_seq", request_id):
            out.extend(orjson.loads(body) for body in row["body"].split("\n"))
        live = self._live.get(request_id)
        if live is not None:
            out.extend(orjson.loads(body) for body in live.pending)
        return tuple(out)
