"""`Session`: a conversation stored as a tree of messages; the active path is the transcript.

Every message is one append-only row (`parent_id` links it into the tree), so a turn's write cost
does not grow with the conversation. The active path is kept in memory once loaded; appending
extends it without reading anything back.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence

import orjson

from think.context.convert import has_unsettled_tools
from think.errors import StorageError
from think.messages import Message
from think.sessions.hygiene import prepare_for_storage
from think.storage import Database, migration

ROOT_SESSION = ""
"""The id of the session a chat connection serves."""


@migration("think.sessions.001_messages")
def _m001_messages(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_messages (
            seq        INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL,
            id         TEXT NOT NULL,
            parent_id  TEXT,                 -- NULL for a root; branches share a parent
            role       TEXT NOT NULL,
            body       BLOB NOT NULL,        -- the UIMessage as JSON
            created_at REAL NOT NULL,
            UNIQUE (session_id, id)
        )""")
    conn.execute("CREATE INDEX think_messages_parent ON think_messages (session_id, parent_id)")
    conn.execute("""
        CREATE TABLE think_sessions (
            id         TEXT PRIMARY KEY,
            leaf_id    TEXT,                 -- the newest message of the active branch
            created_at REAL NOT NULL
        )""")


MIGRATIONS = [_m001_messages]


class Session:
    """One conversation: the active path of a message tree, persisted in `think_messages`."""

    def __init__(self, db: Database, session_id: str = ROOT_SESSION, *,
                 max_persisted_messages: int | None = None) -> None:
        self.db = db
        self.id = session_id
        self.max_persisted_messages = max_persisted_messages
        self._path: list[Message] | None = None
        self._index: dict[str, int] = {}
        self._stored: dict[str, bytes] = {}  # id -> body as stored, to skip unchanged writes
        self._unsettled: set[str] = set()  # ids of messages with tool calls still waiting
        self.version = 0
        """Bumped by every change that is not an append (updates, branches, trims, clears)."""

    # ---- reading ---------------------------------------------------------------------------

    @property
    def leaf_id(self) -> str | None:
        path = self._load()
        return path[-1].id if path else None

    def history(self) -> list[Message]:
        """The active path, oldest first (the live objects: copy before changing them)."""
        return self._load()

    def get(self, message_id: str) -> Message | None:
        path = self._load()
        index = self._index.get(message_id)
        return path[index] if index is not None else None

    def unsettled(self) -> list[Message]:
        """Messages on the active path with tool calls that have no result yet."""
        path = self._load()
        return [path[self._index[i]] for i in sorted(self._unsettled, key=self._index.__getitem__)
                if i in self._index]

    def _track(self, message: Message) -> None:
        if has_unsettled_tools(message):
            self._unsettled.add(message.id)
        else:
            self._unsettled.discard(message.id)

    def _load(self) -> list[Message]:
        if self._path is not None:
            return self._path
        leaf = self.db.value("SELECT leaf_id FROM think_sessions WHERE id = ?", self.id)
        rows = []
        if leaf is not None:
            rows = self.db.sql("""
                WITH RECURSIVE path(id, parent_id, body, depth) AS (
                    SELECT id, parent_id, body, 0 FROM think_messages WHERE session_id = ?1 AND id = ?2
                    UNION ALL
                    SELECT m.id, m.parent_id, m.body, p.depth + 1
                    FROM think_messages m JOIN path p ON m.session_id = ?1 AND m.id = p.parent_id
                )
                SELECT id, body FROM path ORDER BY depth DESC""", self.id, leaf)
        self._path = []
        for row in rows:
            body = bytes(row["body"]) if not isinstance(row["body"], bytes) else row["body"]
            try:
                message = Message.model_validate_json(body)
            except ValueError as exc:
                raise StorageError(f"stored message {row['id']!r} is not a valid UIMessage: {exc}") from exc
            self._stored[message.id] = body
            self._track(message)
            self._path.append(message)
        self._index = {m.id: i for i, m in enumerate(self._path)}
        return self._path

    # ---- writing ---------------------------------------------------------------------------

    def checkout(self, message_id: str) -> None:
        """Make `message_id` the leaf: the active path becomes it and its ancestors.

        The messages after it stay stored (they are another branch now).
        """
        stored = self.db.value("SELECT 1 FROM think_messages WHERE session_id = ? AND id = ?", self.id, message_id)
        if not stored:
            raise StorageError(f"no message {message_id!r} in session {self.id!r}")
        with self.db.transaction():
            self.db.sql("INSERT INTO think_sessions (id, leaf_id, created_at) VALUES (?, ?, ?) "
                        "ON CONFLICT(id) DO UPDATE SET leaf_id = excluded.leaf_id", self.id, message_id, time.time())
        self.forget_cache()

    def save(self, messages: Iterable[Message], *, parent_id: str | None = None) -> list[Message]:
        """Upsert messages in order: known ids are updated in place (only if changed), new ones are
        appended as children of `parent_id` (default: the current leaf), each becoming the leaf.

        Returns the messages as stored (sanitized and capped).
        """
        path = self._load()
        stored: list[Message] = []
        now = time.time()
        with self.db.transaction():
            for message in messages:
                clean = prepare_for_storage(message)
                body = orjson.dumps(clean.to_json())
                index = self._index.get(clean.id)
                if index is not None:
                    if self._stored.get(clean.id) != body:
                        self.db.sql("UPDATE think_messages SET body = ?, role = ? WHERE session_id = ? AND id = ?",
                                    body, clean.role, self.id, clean.id)
                        self._stored[clean.id] = body
                        self.version += 1
                    elif path[index] is not clean:
                        self.version += 1  # same content, new object: cached views must not keep the old one
                    path[index] = clean
                    self._track(clean)
                    stored.append(clean)
                    continue
                parent = parent_id if parent_id is not None else (path[-1].id if path else None)
                if parent is not None and parent not in self._index:
                    raise StorageError(f"parent message {parent!r} is not on the active path")
                existing = self.db.value("SELECT 1 FROM think_messages WHERE session_id = ? AND id = ?",
                                         self.id, clean.id)
                if existing:  # on another branch: update it and switch to it would re-parent; refuse
                    raise StorageError(f"message {clean.id!r} already exists on another branch")
                self.db.sql("INSERT INTO think_messages (session_id, id, parent_id, role, body, created_at) "
                            "VALUES (?, ?, ?, ?, ?, ?)", self.id, clean.id, parent, clean.role, body, now)
                if parent is not None and parent != (path[-1].id if path else None):
                    # A new branch: the active path is the parent's ancestry plus this message.
                    cut = self._index[parent] + 1
                    for dropped in path[cut:]:
                        self._index.pop(dropped.id, None)
                    del path[cut:]
                    self.version += 1
                elif parent is None and path:
                    for dropped in path:
                        self._index.pop(dropped.id, None)
                    path.clear()
                    self.version += 1
                self._index[clean.id] = len(path)
                path.append(clean)
                self._stored[clean.id] = body
                self._track(clean)
                parent_id = None
                stored.append(clean)
            if path:
                self.db.sql("INSERT INTO think_sessions (id, leaf_id, created_at) VALUES (?, ?, ?) "
                            "ON CONFLICT(id) DO UPDATE SET leaf_id = excluded.leaf_id", self.id, path[-1].id, now)
            self._trim()
        return stored

    def _trim(self) -> None:
        limit = self.max_persisted_messages
        path = self._path
        if limit is None or path is None or len(path) <= limit:
            return
        drop = path[: len(path) - limit]
        self.db.execute_many("DELETE FROM think_messages WHERE session_id = ? AND id = ?",
                             [(self.id, m.id) for m in drop])
        del path[: len(drop)]
        self.db.sql("UPDATE think_messages SET parent_id = NULL WHERE session_id = ? AND id = ?", self.id, path[0].id)
        for m in drop:
            self._stored.pop(m.id, None)
            self._unsettled.discard(m.id)
        self._index = {m.id: i for i, m in enumerate(path)}
        self.version += 1

    def clear(self) -> None:
        """Delete every message of this session (all branches)."""
        with self.db.transaction():
            self.db.sql("DELETE FROM think_messages WHERE session_id = ?", self.id)
            self.db.sql("DELETE FROM think_sessions WHERE id = ?", self.id)
        self._path, self._index, self._stored, self._unsettled = [], {}, {}, set()
        self.version += 1

    def count_rows(self) -> int:
        return int(self.db.value("SELECT count(*) FROM think_messages WHERE session_id = ?", self.id) or 0)

    def forget_cache(self) -> None:
        """Drop the in-memory path; the next read loads it again (used when hibernating)."""
        self._path, self._index, self._stored, self._unsettled = None, {}, {}, set()
        self.version += 1


def ids(messages: Sequence[Message]) -> list[str]:
    return [m.id for m in messages]
