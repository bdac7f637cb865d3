"""`Sessions`: many conversations in one agent's database.

The root session (id `""`) is the chat transcript the chat protocol serves; others are created,
forked and listed here, and every turn API can target one by id. Each session object is made
once per agent instance and configured with `Think.configure_session`.
"""

from __future__ import annotations

import builtins
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from think.errors import ConfigurationError, StorageError
from think.sessions.hygiene import Sanitizer
from think.sessions.schema import FTS_BATCH, catch_up_index
from think.sessions.search import SearchResult, search_messages
from think.sessions.session import DEFAULT_HYDRATION_BYTES, ROOT_SESSION, Session
from think.storage import Database
from think.stream.fanout import Fanout

ConfigureSession = Callable[[Session], "Session | None"]


@dataclass(frozen=True, kw_only=True)
class SessionInfo:
    """A session's registry entry."""

    id: str
    name: str | None
    parent_session_id: str | None
    """The session it was forked from, if any."""
    forked_from: str | None
    """The message it was forked at, if any."""
    leaf_id: str | None
    created_at: float
    updated_at: float


_INFO = "SELECT id, name, parent_session_id, forked_from, leaf_id, created_at, updated_at FROM think_sessions"


class Sessions:
    """The sessions of one agent. See the module docstring."""

    def __init__(self, db: Database, *, fanout: Fanout, configure: ConfigureSession | None = None,
                 max_persisted_messages: int | None = None,
                 hydration_byte_budget: int = DEFAULT_HYDRATION_BYTES, sanitize: Sanitizer | None = None) -> None:
        self.db = db
        self._configure = configure
        self._sanitize = sanitize
        self._max_persisted = max_persisted_messages
        self._budget = hydration_byte_budget
        self.root = Session(db, ROOT_SESSION, fanout=fanout, max_persisted_messages=max_persisted_messages,
                            hydration_byte_budget=hydration_byte_budget)
        """The chat transcript (id `""`); its events go to the agent's own fanout."""
        self.root.sanitizer = sanitize
        self._live: dict[str, Session] = {ROOT_SESSION: self.root}
        self.on_open: Callable[[Session], None] | None = None
        """Called with each other session when it is opened (the agent buffers its streams)."""
        self.on_delete: Callable[[str], None] | None = None
        """Called with a session's id inside the transaction that deletes it (its streams go too)."""

    def configure(self, session: Session) -> Session:
        """Apply the agent's `configure_session` to a session (once per session object)."""
        if self._configure is None:
            return session
        configured = self._configure(session)
        if configured is not None and configured is not session:
            raise ConfigurationError("configure_session must configure and return the session it was given")
        return session

    def forget_caches(self) -> None:
        """`forget_cache()` on every open session: nothing of theirs stays in memory."""
        for session in self._live.values():
            session.forget_cache()

    def session(self, session_id: str = ROOT_SESSION) -> Session:
        """The session with this id; `StorageError` if there is none."""
        live = self._live.get(session_id)
        if live is not None:
            return live
        if self.db.value("SELECT 1 FROM think_sessions WHERE id = ?", session_id) is None:
            raise StorageError(f"no session {session_id!r}: create it with sessions.create()")
        session = Session(self.db, session_id, fanout=Fanout(), max_persisted_messages=self._max_persisted,
                          hydration_byte_budget=self._budget)
        session.sanitizer = self._sanitize
        self.configure(session)
        self._live[session_id] = session
        if self.on_open is not None:
            self.on_open(session)
        return session

    def get(self, session_id: str) -> SessionInfo | None:
        row = self.db.one(_INFO + " WHERE id = ?", session_id)
        return None if row is None else _info(row)

    def list(self) -> list[SessionInfo]:
        """Every session, most recently updated first."""
        return [_info(row) for row in self.db.sql(_INFO + " ORDER BY updated_at DESC, created_at DESC")]

    def create(self, name: str | None = None, *, id: str | None = None,
               parent_session_id: str | None = None, forked_from: str | None = None) -> Session:
        """A new, empty session (id: a new UUID unless given)."""
        session_id = id if id is not None else uuid.uuid4().hex
        if not session_id or len(session_id) > 128:
            raise ConfigurationError(f"session id {session_id!r} is not valid: use 1-128 characters")
        if self.db.value("SELECT 1 FROM think_sessions WHERE id = ?", session_id) is not None:
            raise StorageError(f"session {session_id!r} already exists")
        now = time.time()
        self.db.sql("INSERT INTO think_sessions (id, leaf_id, created_at, updated_at, name, parent_session_id, "
                    "forked_from) VALUES (?, NULL, ?, ?, ?, ?, ?)", session_id, now, now, name,
                    parent_session_id, forked_from)
        return self.session(session_id)

    def fork(self, from_id: str, *, at_message: str | None = None, name: str | None = None) -> Session:
        """A new session holding a copy of `from_id`'s path up to `at_message` (default: its leaf).

        The copies keep their ids; the compaction in effect at that point comes along. The two
        sessions then go on independently.
        """
        source = self.session(from_id)
        at = at_message if at_message is not None else source.leaf_id
        if at is None:
            raise StorageError(f"session {from_id!r} has no messages to fork")
        leaf_seq = self.db.value("SELECT seq FROM think_messages WHERE session_id = ? AND id = ?", from_id, at)
        if leaf_seq is None:
            raise StorageError(f"cannot fork session {from_id!r} at {at!r}: it has no such message")
        rows = self.db.sql("""
            WITH RECURSIVE path(seq, parent, depth) AS (
                SELECT seq, parent, 0 FROM think_messages WHERE seq = ?
                UNION ALL SELECT m.seq, m.parent, p.depth + 1 FROM path p JOIN think_messages m ON m.seq = p.parent
            ) SELECT m.id, m.role, m.body, m.created_at FROM path JOIN think_messages m ON m.seq = path.seq
            ORDER BY path.depth DESC""", leaf_seq)
        with self.db.transaction():
            forked = self.create(name, parent_session_id=from_id, forked_from=at)
            parent = None
            for row in rows:
                parent = self.db.value("INSERT INTO think_messages (session_id, id, parent, role, body, created_at) "
                                       "VALUES (?, ?, ?, ?, ?, ?) RETURNING seq", forked.id, row["id"], parent,
                                       row["role"], row["body"], row["created_at"])
            copied = {row["id"] for row in rows}
            for c in reversed(source.get_compactions()):  # oldest first, so the newest stays newest
                if c.from_id in copied and c.to_id in copied:
                    self.db.sql("INSERT INTO think_compactions (id, session_id, summary, from_id, to_id, created_at) "
                                "VALUES (?, ?, ?, ?, ?, ?)", str(uuid.uuid4()), forked.id, c.summary, c.from_id,
                                c.to_id, c.created_at)
            self.db.sql("UPDATE think_sessions SET leaf_id = ? WHERE id = ?", at, forked.id)
            catch_up_index(self.db, upto=int(parent or 0), batch=FTS_BATCH)  # a big fork is indexed now
        forked.forget_cache()
        return forked

    def rename(self, session_id: str, name: str | None) -> None:
        self._require(session_id)
        self.db.sql("UPDATE think_sessions SET name = ? WHERE id = ?", name, session_id)

    def delete(self, session_id: str) -> None:
        """Delete a session with its messages, compactions and context blocks (not the root)."""
        if session_id == ROOT_SESSION:
            raise StorageError("the root session cannot be deleted; clear its messages instead")
        self._require(session_id)
        session = self.session(session_id)
        with self.db.transaction():
            session.clear()
            if self.on_delete is not None:
                self.on_delete(session_id)
            self.db.sql("DELETE FROM think_context_blocks WHERE substr(key, -length(?) - 1) = ?",
                        session_id, f"_{session_id}")
            self.db.sql("DELETE FROM think_sessions WHERE id = ?", session_id)
        del self._live[session_id]

    def search(self, query: str, *, limit: int = 10) -> builtins.list[SearchResult]:
        """Full-text search across every session."""
        return search_messages(self.db, query, session_id=None, limit=limit)

    def _require(self, session_id: str) -> None:
        if self.db.value("SELECT 1 FROM think_sessions WHERE id = ?", session_id) is None:
            raise StorageError(f"no session {session_id!r}")


def _info(row: dict[str, object]) -> SessionInfo:
    return SessionInfo(**row)  # type: ignore[arg-type]
