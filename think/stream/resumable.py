"""`ResumableStreams`: every chunk of the running turn, buffered in the agent's SQLite for resume.

A client that reconnects mid-turn (a reload, a network blip, a second tab) is offered the running
stream and gets its chunks replayed with their original `seq`, then the live ones. The buffer is
a listener on the agent's fan-out, so every turn of the chat transcript is buffered whoever
started it, and it survives the process: a stream still marked `streaming` when the agent starts
again was orphaned by a restart (see `think.turns.interrupted`).

Writes are batched, never a commit per token: chunks wait in memory and go to SQLite as one row
of chunk bodies joined by newlines (a chunk's JSON never contains a raw newline). A row is
written once its oldest chunk has waited `FLUSH_AFTER` seconds (checked as chunks arrive) or it
holds `ROW_CHUNKS` chunks, and at once for the chunks a resuming client must not lose: the first
content delta, tool calls and their outputs, and approval requests. The end of the stream (its
last chunks and its status) goes in the turn's last commit, with the reply (`sealing`). A model
that streams fast thus costs a few commits a turn, and a crash loses at most the last
`FLUSH_AFTER` seconds of text. Replays read the rows plus what still waits.

Retention: finished streams are kept `RETAIN_FINISHED` seconds after they end, abandoned ones
(`streaming` or `orphaned`, no new chunk) `RETAIN_ABANDONED` seconds after their last chunk. Expired
streams are ignored at once and deleted by `sweep()`, which runs on every stream start and end
and when the agent starts.

The record of the last failed turn (the *terminal* record, delivered through the resume
handshake on every reconnect) lives here too, until a later turn or a clear removes it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import orjson

from think.messages import JSONObject
from think.protocol.payloads import chunk_body
from think.storage import Database, migration, rebuild_table
from think.stream.fanout import ChunkEvent, TurnEvent, TurnFailed, TurnFinished, TurnStarted

ROW_CHUNKS = 250
"""Most chunks in one row."""
CHECK_EVERY = 10
"""Content deltas between two looks at the clock."""
FLUSH_AFTER = 0.1
"""Seconds a chunk may wait in memory before its row is written (checked as chunks arrive)."""
SWEEP_EVERY = 30.0
"""Seconds between two retention sweeps (they run as streams start and end)."""
RETAIN_FINISHED = 600.0
RETAIN_ABANDONED = 3600.0
_FLUSH_NOW = frozenset({"tool-input-available", "tool-output-available", "tool-output-error",
                        "tool-approval-request", "tool-output-denied", "tool-input-error"})
_CONTENT = frozenset({"text-delta", "reasoning-delta"})
_dumps = orjson.dumps

StreamStatus = Literal["streaming", "completed", "aborted", "error", "orphaned"]
_LAST_WRITE = ("coalesce((SELECT max(c.created_at) FROM think_stream_chunks c WHERE c.request_id = s.request_id), "
               "s.created_at)")
"""SQL: when a stream (`s`) last had a chunk written."""


@migration("think.stream.001_resumable")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_streams (
            request_id   TEXT PRIMARY KEY,
            status       TEXT NOT NULL,            -- streaming | completed | aborted | error | orphaned
            continuation INTEGER NOT NULL DEFAULT 0,
            message_id   TEXT,                     -- the assistant message the stream builds
            created_at   REAL NOT NULL,
            completed_at REAL
        )""")
    conn.execute("""
        CREATE TABLE think_stream_chunks (
            id         INTEGER PRIMARY KEY,
            request_id TEXT NOT NULL,
            first_seq  INTEGER NOT NULL,           -- seq of the first chunk in body
            body       TEXT NOT NULL,              -- chunk JSON texts joined by "\\n"
            created_at REAL NOT NULL
        )""")
    conn.execute("CREATE INDEX think_stream_chunks_request ON think_stream_chunks (request_id, first_seq)")
    conn.execute("""
        CREATE TABLE think_stream_terminal (
            id         INTEGER PRIMARY KEY CHECK (id = 1),
            request_id TEXT NOT NULL,
            body       TEXT NOT NULL               -- the error text clients are shown
        )""")


@migration("think.stream.003_keyed_streams")
def _m003(conn: sqlite3.Connection) -> None:
    # Streams keyed by request id WITHOUT ROWID: a stream row is one b-tree entry instead of a
    # row plus an index entry, so a stream's start and end change one page each, not two. (The
    # chunk rows stay in a rowid table: a row of many chunks is often over the ~1 KB an entry of a
    # WITHOUT ROWID b-tree keeps in its page, and the overflow pages cost more than the index.)
    rebuild_table(conn, "think_streams", lambda sql: f"{sql} WITHOUT ROWID")


MIGRATIONS = [_m001, _m003]


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """A buffered stream as stored."""

    request_id: str
    status: StreamStatus
    continuation: bool
    message_id: str | None


@dataclass(frozen=True, slots=True)
class Terminal:
    """The last failed turn: its request id and the error text clients see."""

    request_id: str
    body: str


@dataclass
class LiveStream:
    """The stream a turn is producing now (in memory; its chunks are in SQLite or `pending`)."""

    request_id: str
    continuation: bool
    message_id: str | None = None
    next_seq: int = 0
    """The seq of the first chunk in `pending` (streams count from 0, one per chunk)."""
    pending: list[str] = field(default_factory=list)
    flushed_at: float = 0.0
    content_flushed: bool = False
    tool_calls: set[str] = field(default_factory=set)
    """Tool call ids this stream announced (a result may arrive before the turn has ended)."""
    extends: bool = False
    """A recovery continuation streaming into the stored message `message_id`."""
    sealed: bool = False
    """Its end is stored already (`ResumableStreams.sealing`): `finish` only lets it go."""


class ResumableStreams:
    """The resumable chunk buffer of one agent. See the module docstring."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.db = db
        self.clock = clock
        self.monotonic = monotonic
        self.live: LiveStream | None = None
        """The stream being produced now."""
        self.orphan: StreamInfo | None = None
        """A stream a restart interrupted, offered to reconnecting clients until one ACKs it."""
        self.extending: set[str] = set()
        """Interrupted streams of recovery continuations: their chunks were folded into the
        message they extended (rebuilt at start-up), so a replay must not build them again."""
        self._errors: dict[str, str] = {}
        self._last_event: ChunkEvent | None = None
        self._last_body = ""
        self._terminal: Terminal | bool | None = False  # False: not read yet
        self._swept = -SWEEP_EVERY

    # ---- the fan-out listener ----------------------------------------------------------------

    async def on_event(self, event: TurnEvent) -> None:
        if event.__class__ is ChunkEvent:  # nearly every event: the cheapest test first
            self.append(event)
            return
        match event:
            case TurnStarted(request_id=request_id, continuation=continuation, extends=extends):
                self.start(request_id, continuation=continuation, extends=extends)
            case TurnFailed(request_id=request_id, error=error):
                self._errors[request_id] = error
                if len(self._errors) > 64:  # failures of turns that had already finished (recovery)
                    del self._errors[next(iter(self._errors))]
            case TurnFinished(request_id=request_id, outcome=outcome, message=message, error=error):
                text = self._errors.pop(request_id, None) or error
                self.finish(request_id, outcome, message_id=message.id if message is not None else None,
                            error=text)

    def body_of(self, event: ChunkEvent) -> str:
        """The chunk of `event` as JSON text (encoded once, shared with the buffer)."""
        return self._last_body if self._last_event is event else chunk_body(event.chunk)

    # ---- writing ------------------------------------------------------------------------------

    def start(self, request_id: str, *, continuation: bool = False, extends: str | None = None) -> None:
        """A turn starts streaming: its earlier chunks (a reused request id) and the terminal
        record go, and an orphan is no longer offered. `extends`: the stored message a recovery
        continuation streams into (recorded at once, so a crash rebuilds onto that message)."""
        if self.live is not None:
            self._flush(self.live)
        now = self.clock()
        with self.db.transaction():  # one commit
            self.db.sql("DELETE FROM think_stream_chunks WHERE request_id = ?", request_id)
            self.db.sql("INSERT OR REPLACE INTO think_streams (request_id, status, continuation, message_id, "
                        "created_at) VALUES (?, 'streaming', ?, ?, ?)", request_id, int(continuation), extends, now)
            if self.orphan is not None:
                self._set_status(self.orphan.request_id, "completed", now)
        self.orphan = None
        self.clear_terminal()
        self.live = LiveStream(request_id, continuation, message_id=extends, extends=extends is not None,
                               flushed_at=self.monotonic())
        self._sweep_now_and_then(now)

    def append(self, event: ChunkEvent) -> str:
        """Buffer one chunk of the live stream; returns its JSON text.

        This runs for every token of every turn, so the common case (a content delta after the
        first) does the least: an append, and a look at the clock every `CHECK_EVERY` chunks.
        """
        chunk: JSONObject = event.chunk
        body = self._last_body = _dumps(chunk).decode()
        self._last_event = event
        live = self.live
        if live is None or live.request_id != event.request_id:
            return body  # the chat was cleared under a running turn: nothing is kept
        pending = live.pending
        pending.append(body)
        kind = chunk.get("type")
        if kind in _CONTENT:
            if live.content_flushed:
                if len(pending) % CHECK_EVERY == 0 and (
                        len(pending) >= ROW_CHUNKS or self.monotonic() - live.flushed_at >= FLUSH_AFTER):
                    self._flush(live)
                return body
            live.content_flushed = True
        else:
            if kind == "start" and not live.continuation:
                live.message_id = chunk.get("messageId")
            elif kind == "tool-input-available":
                live.tool_calls.add(str(chunk.get("toolCallId")))
            if kind not in _FLUSH_NOW:
                if len(pending) >= ROW_CHUNKS or self.monotonic() - live.flushed_at >= FLUSH_AFTER:
                    self._flush(live)
                return body
        self._flush(live)
        return body

    def _flush(self, live: LiveStream) -> None:
        pending = live.pending
        live.flushed_at = self.monotonic()
        if not pending:
            return
        # One statement, so one implicit transaction: the fewest commits a flush can cost.
        self.db.sql("INSERT INTO think_stream_chunks (request_id, first_seq, body, created_at) VALUES (?, ?, ?, ?)",
                    live.request_id, live.next_seq, "\n".join(pending), self.clock())
        live.next_seq += len(pending)
        pending.clear()

    def finish(self, request_id: str, outcome: str, *, message_id: str | None = None,
               error: str | None = None) -> None:
        """The turn ended: write what waits, record how it ended and update the terminal record."""
        live = self.live
        now = self.clock()
        if live is not None and live.request_id == request_id:
            self._flush(live)
            self.live = None
            if not live.sealed:
                self._record_end(live, outcome, message_id, now)
        if outcome == "error":
            self.set_terminal(request_id, error or "The turn failed.")
        elif outcome in ("completed", "aborted"):
            self.clear_terminal()
        self._sweep_now_and_then(now)

    def sealing(self, request_id: str, outcome: str, message_id: str | None) -> Callable[[], None] | None:
        """The end of the live stream `request_id`, written in the caller's open transaction (a
        turn's last commit holds its reply, its stream's end and its recovery fiber together, so no
        crash can leave one without the others). Returns what to call once that transaction has
        committed (nothing in memory changes before); None: no live stream of that turn here.
        `finish()` still runs when the turn's `TurnFinished` arrives, without writing the end again."""
        live = self.live
        if live is None or live.request_id != request_id:
            return None
        now = self.clock()
        rows = len(live.pending)
        if rows:
            self.db.sql("INSERT INTO think_stream_chunks (request_id, first_seq, body, created_at) VALUES (?, ?, ?, ?)",
                        live.request_id, live.next_seq, "\n".join(live.pending), now)
        self._record_end(live, outcome, message_id, now)

        def committed() -> None:
            del live.pending[:rows]
            live.next_seq += rows
            live.flushed_at = self.monotonic()
            live.sealed = True

        return committed

    def _record_end(self, live: LiveStream, outcome: str, message_id: str | None, now: float) -> None:
        status: StreamStatus = "error" if outcome == "error" else "aborted" if outcome == "aborted" else "completed"
        self.db.sql("UPDATE think_streams SET status = ?, completed_at = ?, message_id = coalesce(message_id, ?) "
                    "WHERE request_id = ?", status, now,
                    message_id if live.continuation else live.message_id or message_id, live.request_id)

    # ---- reading ------------------------------------------------------------------------------

    def get(self, request_id: str) -> StreamInfo | None:
        """The stored stream with this request id, unless it has expired."""
        row = self.db.one(f"SELECT request_id, status, continuation, message_id, completed_at, {_LAST_WRITE} "
                          "AS updated_at FROM think_streams s WHERE request_id = ?", request_id)
        if row is None or self._expired(row, self.clock()):
            return None
        return StreamInfo(row["request_id"], row["status"], bool(row["continuation"]), row["message_id"])

    def chunks(self, request_id: str) -> list[tuple[int, str]]:
        """`(seq, chunk JSON)` of every buffered chunk of a stream, in order."""
        out: list[tuple[int, str]] = []
        for row in self.db.sql("SELECT first_seq, body FROM think_stream_chunks WHERE request_id = ? "
                               "ORDER BY first_seq", request_id):
            seq = row["first_seq"]
            for body in row["body"].split("\n"):
                out.append((seq, body))
                seq += 1
        live = self.live
        if live is not None and live.request_id == request_id:
            out.extend(enumerate(live.pending, start=live.next_seq))
        return out

    # ---- restarts -----------------------------------------------------------------------------

    def orphans(self) -> list[StreamInfo]:
        """Streams the last process left `streaming` (a restart interrupted them), oldest first.

        They are marked `orphaned`; the newest stream not yet delivered becomes `self.orphan`.
        """
        now = self.clock()
        self.sweep(now)
        rows = self.db.sql("SELECT request_id, status, continuation, message_id FROM think_streams "
                           "WHERE status IN ('streaming', 'orphaned') ORDER BY created_at")
        self.db.sql("UPDATE think_streams SET status = 'orphaned' WHERE status = 'streaming'")
        infos = [StreamInfo(r["request_id"], "orphaned", bool(r["continuation"]), r["message_id"]) for r in rows]
        self.orphan = infos[-1] if infos else None
        # A continuation still streaming that names its message was a recovery continuation.
        self.extending = {r["request_id"] for r in rows
                          if r["status"] == "streaming" and r["continuation"] and r["message_id"]}
        return [info for info, row in zip(infos, rows, strict=True) if row["status"] == "streaming"]

    def set_message_id(self, request_id: str, message_id: str) -> None:
        self.db.sql("UPDATE think_streams SET message_id = ? WHERE request_id = ?", message_id, request_id)
        if self.orphan is not None and self.orphan.request_id == request_id:
            self.orphan = StreamInfo(request_id, "orphaned", self.orphan.continuation, message_id)

    def settle_orphan(self, request_id: str) -> None:
        """An interrupted stream has been delivered: it is no longer offered."""
        self._set_status(request_id, "completed", self.clock())
        if self.orphan is not None and self.orphan.request_id == request_id:
            self.orphan = None

    def _set_status(self, request_id: str, status: StreamStatus, now: float) -> None:
        self.db.sql("UPDATE think_streams SET status = ?, completed_at = ? WHERE request_id = ?",
                    status, now, request_id)

    # ---- the terminal record ------------------------------------------------------------------

    @property
    def terminal(self) -> Terminal | None:
        if self._terminal is False:
            row = self.db.one("SELECT request_id, body FROM think_stream_terminal WHERE id = 1")
            self._terminal = Terminal(row["request_id"], row["body"]) if row else None
        return self._terminal if isinstance(self._terminal, Terminal) else None

    def set_terminal(self, request_id: str, body: str) -> None:
        self.db.sql("INSERT OR REPLACE INTO think_stream_terminal (id, request_id, body) VALUES (1, ?, ?)",
                    request_id, body)
        self._terminal = Terminal(request_id, body)

    def clear_terminal(self) -> None:
        if self._terminal is None:
            return
        self._clear_terminal()

    def _clear_terminal(self) -> None:
        self.db.sql("DELETE FROM think_stream_terminal")
        self._terminal = None

    def blank(self) -> None:
        """The database was made from the schema image for this start: it holds no terminal
        record and no stream, so the first turn neither clears the one nor sweeps the others
        (the next sweep is due `SWEEP_EVERY` seconds on)."""
        self._terminal = None
        self._swept = self.monotonic()

    # ---- retention ----------------------------------------------------------------------------

    @staticmethod
    def _expired(row: JSONObject, now: float) -> bool:
        if row["completed_at"] is not None and row.get("status") not in ("streaming", "orphaned"):
            return bool(now - row["completed_at"] > RETAIN_FINISHED)
        return bool(now - row["updated_at"] > RETAIN_ABANDONED)

    def _sweep_now_and_then(self, now: float) -> None:
        if self.monotonic() - self._swept >= SWEEP_EVERY:
            self.sweep(now)

    def sweep(self, now: float | None = None) -> int:
        """Delete expired streams (never the live one); returns how many went."""
        now = self.clock() if now is None else now
        self._swept = self.monotonic()
        live = self.live.request_id if self.live is not None else ""
        doomed = [r["request_id"] for r in self.db.sql(
            "SELECT request_id FROM think_streams s WHERE request_id != ? AND ("
            "(status IN ('completed', 'aborted', 'error') AND completed_at < ?) OR "
            f"(status IN ('streaming', 'orphaned') AND {_LAST_WRITE} < ?))",
            live, now - RETAIN_FINISHED, now - RETAIN_ABANDONED)]
        if doomed:
            with self.db.transaction():
                for request_id in doomed:
                    self.db.sql("DELETE FROM think_stream_chunks WHERE request_id = ?", request_id)
                    self.db.sql("DELETE FROM think_streams WHERE request_id = ?", request_id)
            if self.orphan is not None and self.orphan.request_id in doomed:
                self.orphan = None
        return len(doomed)

    def clear(self) -> None:
        """Forget every stream and the terminal record (the chat was cleared)."""
        with self.db.transaction():
            self.db.sql("DELETE FROM think_stream_chunks")
            self.db.sql("DELETE FROM think_streams")
            self._clear_terminal()
        self.live = None
        self.orphan = None
        self._errors.clear()
