"""`Session`: a conversation stored as a tree of messages; the active path is the transcript.

Every message is one append-only row (`parent` links it into the tree), so a turn's write cost
does not grow with the conversation. The active path is kept in memory once loaded, but only a
window of it: the newest messages within `hydration_byte_budget` bytes of stored JSON, and never
fewer than the last 4. Appending extends the window without reading anything back.

What the model sees (`model_view()`) is the window with the compaction in effect laid over it;
what clients see (`history()`) is the window itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Literal

import orjson

from think._gc import paused_collector
from think.context.blocks import BlockProvider, ContextBlock, ContextBlocks, PromptStore, WhenChanged
from think.context.tokens import TokenCounter
from think.errors import ConfigurationError, StorageError
from think.messages import Message
from think.protocol.limits import check_depth
from think.sessions import rows as chunked
from think.sessions.compaction import CompactFn, Compaction, CompactionErrorHandler, Compactor
from think.sessions.hygiene import Sanitizer, prepare_for_storage, sanitized
from think.sessions.schema import FTS_BATCH, MIGRATIONS, catch_up_index
from think.sessions.search import HistorySearch, SearchResult, search_messages
from think.sessions.window import ANCESTORS_SQL, PathRow, Window, decode, read_path_rows
from think.storage import Database
from think.stream.fanout import Fanout, SessionChanged

__all__ = ["DEFAULT_HYDRATION_BYTES", "MIGRATIONS", "NEW_ROOT", "ROOT_SESSION", "Session"]

ROOT_SESSION = ""
"""The id of the session a chat connection serves."""
NEW_ROOT = ""
"""`add_messages(parent_id=NEW_ROOT)`: the messages start a new tree, beside the first message
(an edited first question). No message has this id: ids are never empty."""
DEFAULT_HYDRATION_BYTES = 32 * 1024 * 1024
"""Stored JSON bytes of the active path kept in memory (the newest messages; at least 4)."""


class Session:
    """One conversation: a tree of messages persisted in `think_messages`. See the module docstring.

    Configure it with the builder calls (`with_context`, `with_cached_prompt`, `on_compaction`,
    `compact_after`), usually in `Think.configure_session`.
    """

    def __init__(self, db: Database, session_id: str = ROOT_SESSION, *,
                 max_persisted_messages: int | None = None,
                 hydration_byte_budget: int = DEFAULT_HYDRATION_BYTES,
                 fanout: Fanout | None = None) -> None:
        self.db = db
        self.id = session_id
        self.max_persisted_messages = max_persisted_messages
        self.hydration_byte_budget = hydration_byte_budget
        self.fanout = fanout if fanout is not None else Fanout()
        """Where this session's turns and `SessionChanged` events are published."""
        self.context = ContextBlocks(db, session_id)
        """The context blocks that make up this session's system prompt."""
        self.version = 0
        """Bumped by every change that is not an append (updates, branches, trims, overlays)."""
        self._window: Window | None = None
        self._cold_rows: tuple[int, int, list[PathRow]] | None = None  # (version, leaf seq, rows) history_json read
        self._unindexed = 0  # messages this object wrote since it last brought the search index up to date
        self.compaction = Compactor(self)
        """Summaries over this session's messages, and the model's view with them."""
        self.sanitizer: Sanitizer | None = None
        """`Think.on_sanitize_message`, when overridden: run on a copy of every message before it
        is stored (then the built-in hygiene and the size cap)."""

    # ---- builder -----------------------------------------------------------------------------

    def with_context(self, label: str, *, description: str | None = None, max_tokens: int | None = None,
                     provider: BlockProvider | None = None, when_changed: WhenChanged = "rewrite") -> Session:
        """Add a context block. Without a provider it is a writable block stored in SQLite.

        `when_changed="remind"`: a change is announced to the model after the cached prefix
        instead of rendering the system prompt again (`think.context.reminders`)."""
        self.context.add(label, description=description, max_tokens=max_tokens, provider=provider,
                         when_changed=when_changed)
        return self

    def with_searchable_history(self, label: str = "history", *, description: str | None = None,
                                across_sessions: bool = False) -> Session:
        """Add a block the model searches with `search_context`: this conversation's messages
        (all of them, compacted ones included), or every session's with `across_sessions`."""
        provider = HistorySearch(self.db, None if across_sessions else self.id)
        self.context.add(label, description=description, provider=provider)
        return self

    def with_cached_prompt(self, store: PromptStore | None = None) -> Session:
        """Keep the frozen system prompt in storage, so a restart sends the same bytes."""
        self.context.cache_prompt(store)
        return self

    def on_compaction(self, fn: CompactFn) -> Session:
        """Summarize with `fn(messages, ctx)`; see `think.sessions.summarize` for a ready one."""
        self.compaction.fn = fn
        return self

    def compact_after(self, tokens: int, *, token_counter: TokenCounter | None = None) -> Session:
        """Compact automatically when the model's view passes `tokens` (estimated per message)."""
        if tokens <= 0:
            raise ConfigurationError(f"compact_after needs a positive token threshold, got {tokens}")
        self.compaction.threshold = tokens
        if token_counter is not None:
            self.compaction.counter = token_counter
        return self

    def on_compaction_error(self, handler: CompactionErrorHandler) -> Session:
        """Called when an automatic compaction fails (the turn goes on without it)."""
        self.compaction.on_error = handler
        return self

    # ---- reading -----------------------------------------------------------------------------

    @property
    def leaf_id(self) -> str | None:
        path = self._load()
        return path[-1].id if path else None

    @property
    def windowed(self) -> bool:
        """True when older messages of the active path are stored but not in memory."""
        return self._win().windowed

    def history(self) -> list[Message]:
        """The active path (its hydrated window), oldest first. The live objects: copy to change."""
        return self._load()

    def history_json(self) -> list[bytes]:
        """The active path as stored JSON, oldest first: each item is `message.dumps()` of the
        matching `history()` message, without encoding it again (for sending transcripts).

        When the path is not in memory it is read without validating the messages (a client that
        connects to see the history should not pay for that); the next `history()` reuses the rows.
        """
        if self._window is not None:
            return list(self._window.bodies)
        leaf = self._leaf_seq()
        if leaf is None:
            return []
        cold = self._cold_rows
        if cold is None or cold[:2] != (self.version, leaf):
            rows = read_path_rows(self.db, leaf, self.hydration_byte_budget)
            cold = self._cold_rows = (self.version, leaf, rows)
        return [body for _, _, _, body in cold[2]]

    def history_ids(self) -> list[str]:
        """The ids of `history()`, in order (a live list: do not change it)."""
        return self._win().ids

    def history_roles(self) -> list[str]:
        """The roles of `history()`, in order (a live list: do not change it)."""
        return self._win().roles

    def get(self, message_id: str) -> Message | None:
        """A message of the hydrated active path, or None."""
        window = self._win()
        index = window.index.get(message_id)
        return window.messages[index] if index is not None else None

    def get_message(self, message_id: str) -> Message | None:
        """Any stored message of this session (any branch, in memory or not), or None."""
        if (loaded := self.get(message_id)) is not None:
            return loaded
        row = self.db.one("SELECT seq, body, chunks FROM think_messages WHERE session_id = ? AND id = ?",
                          self.id, message_id)
        if row is None:
            return None
        return decode(message_id, chunked.full_body(self.db, row["seq"], row["body"], row["chunks"]))

    def get_branches(self, message_id: str) -> list[Message]:
        """The children of a message, oldest first: the alternative answers to it."""
        seq = self._seq_of(message_id)
        children = self.db.sql("SELECT seq, id, body, chunks FROM think_messages WHERE parent = ? ORDER BY seq", seq)
        return [decode(row["id"], row["body"]) for row in chunked.join_rows(self.db, children)]

    def unsettled(self) -> list[Message]:
        """Messages on the active path with tool calls that have no result yet."""
        window = self._win()
        return [window.messages[window.index[i]] for i in sorted(window.unsettled, key=window.index.__getitem__)]

    def count_rows(self) -> int:
        return int(self.db.value("SELECT count(*) FROM think_messages WHERE session_id = ?", self.id) or 0)

    def model_view(self) -> list[Message]:
        """What the model sees: the hydrated path with the compaction in effect laid over it."""
        return self.compaction.view()

    def index_of(self, message_id: str) -> int | None:
        """The position of a message in the hydrated active path, or None."""
        return self._win().index.get(message_id)

    def ids_before_window(self) -> set[str]:
        """Ids of the active path's messages older than the hydrated window (read from storage)."""
        window = self._win()
        if not window.windowed or not window.seqs:
            return set()
        rows = self.db.sql(ANCESTORS_SQL + " SELECT m.id FROM anc JOIN think_messages m ON m.seq = anc.seq",
                           window.seqs[0])
        return {row["id"] for row in rows}

    def search(self, query: str, *, limit: int = 10) -> list[SearchResult]:
        """Full-text search over every message of this session (all branches, compacted ones too)."""
        return search_messages(self.db, query, session_id=self.id, limit=limit)

    # ---- writing -----------------------------------------------------------------------------

    def add_messages(self, messages: Iterable[Message], *, parent_id: str | None = None,
                     mode: Literal["append", "upsert"] = "append") -> list[Message]:
        """Write messages without a turn; entries chain, each new one becoming the leaf.

        The first new message hangs under `parent_id` (which must be stored in this session;
        default: the leaf; `NEW_ROOT`: a new tree beside the first message). An id that is already
        stored is left alone with `mode="append"` (appending is idempotent) and has its content
        replaced in place with `mode="upsert"` (never re-parented). Returns the messages as stored,
        sanitized and capped. A message nested deeper than the depth limit
        (`think.protocol.limits`) raises `TooDeep`; nothing is written.
        """
        if mode not in ("append", "upsert"):
            raise ValueError(f"mode must be 'append' or 'upsert', not {mode!r}")
        window = self._win()
        out: list[Message] = []
        now = time.time()
        changed = False
        last_seq = 0
        parent_seq = (None if parent_id is None or parent_id == NEW_ROOT or parent_id in window.index
                      else self._seq_of(parent_id))
        prepared: list[tuple[Message, bytes]] = []
        for message in messages:  # checked before anything is written: all or nothing
            clean = prepare_for_storage(sanitized(self.sanitizer, message))
            data = clean.to_json()
            check_depth(data, f"Message {clean.id!r}")
            prepared.append((clean, orjson.dumps(data)))
        with self.db.transaction():
            if parent_id == NEW_ROOT:  # a sibling of the first message: the path starts afresh
                window = self._window = Window()
                self.version += 1
                parent_id = None
            for clean, body in prepared:
                position = window.index.get(clean.id)
                if position is not None:
                    if mode == "upsert":
                        self._update_loaded(window, position, clean, body)
                        changed = True
                    out.append(window.messages[position])
                    continue
                stored = self.db.value("SELECT seq FROM think_messages WHERE session_id = ? AND id = ?",
                                       self.id, clean.id)
                if stored is not None:  # on another branch, or older than the window: never re-parented
                    if mode == "upsert":
                        chunked.rewrite(self.db, int(stored), clean.role, body)
                        self.version += 1
                        changed = True
                    out.append(clean)
                    continue
                if parent_seq is not None:
                    window = self._read(parent_seq)  # under a message outside the window: go there first
                elif parent_id is not None and parent_id != window.messages[-1].id:
                    window.cut_after(window.index[parent_id])  # a new branch under an earlier message
                    self.version += 1
                last_seq = chunked.insert(self.db, self.id, clean.id, window.seqs[-1] if window.seqs else None,
                                       clean.role, body, now)
                window.append(clean, last_seq, body)
                self._unindexed += 1
                parent_id = parent_seq = None
                changed = True
                out.append(clean)
            if changed:
                self._set_leaf(now)
                self._trim(window)
            if self._unindexed >= FTS_BATCH:
                catch_up_index(self.db, upto=last_seq)
                self._unindexed = 0
        if window.slide(self.hydration_byte_budget):
            self.version += 1
        return out

    def save(self, messages: Iterable[Message], *, parent_id: str | None = None) -> list[Message]:
        """`add_messages(..., mode="upsert")`: what turns use to store what they produce."""
        return self.add_messages(messages, parent_id=parent_id, mode="upsert")

    def checkout(self, message_id: str) -> None:
        """Make `message_id` the leaf: the active path becomes it and its ancestors.

        The messages after it stay stored (they are another branch now).
        """
        seq = self._seq_of(message_id)
        with self.db.transaction():
            self._read(seq)
            self._set_leaf(time.time())

    def switch_branch(self, message_id: str) -> None:
        """Make the branch through `message_id` active, down to its newest message."""
        seq = self._seq_of(message_id)
        newest = self.db.value("""
            WITH RECURSIVE sub(seq) AS (
                SELECT ?1 UNION ALL SELECT m.seq FROM think_messages m JOIN sub ON m.parent = sub.seq
            ) SELECT max(seq) FROM sub""", seq)
        with self.db.transaction():
            self._read(int(newest))
            self._set_leaf(time.time())

    def clear(self) -> None:
        """Delete every message (all branches) and compaction of this session; blocks stay."""
        with self.db.transaction():
            self.db.sql("DELETE FROM think_messages WHERE session_id = ?", self.id)
            self.db.sql("DELETE FROM think_compactions WHERE session_id = ?", self.id)
            self.db.sql("UPDATE think_sessions SET leaf_id = NULL, updated_at = ? WHERE id = ?", time.time(), self.id)
        self._window = Window()
        self.version += 1
        self.compaction.forget()

    def forget_cache(self) -> None:
        """Drop what is held in memory (the path, rows read for `history_json`, the compaction
        view); the next read loads it again. Used when forking and when the agent hibernates."""
        self._window = None
        self._cold_rows = None
        self.version += 1
        self.compaction.forget()

    # ---- context blocks and the system prompt ----------------------------------------------

    async def system_prompt(self) -> str:
        """The frozen prompt rendered from the context blocks ("" when there are none)."""
        return await self.context.system_prompt()

    async def refresh_system_prompt(self) -> str:
        return await self.context.refresh_system_prompt()

    async def get_context_block(self, label: str) -> ContextBlock:
        return await self.context.get(label)

    async def get_context_blocks(self) -> list[ContextBlock]:
        return await self.context.get_all()

    async def replace_context_block(self, label: str, content: str) -> ContextBlock:
        return await self.context.replace(label, content)

    async def append_context_block(self, label: str, content: str) -> ContextBlock:
        return await self.context.append(label, content)

    # ---- compaction --------------------------------------------------------------------------

    def get_compactions(self) -> list[Compaction]:
        """Every stored compaction of this session, newest first."""
        return self.compaction.all()

    def compaction_in_effect(self) -> Compaction | None:
        return self.compaction.in_effect()

    def add_compaction(self, summary: str, from_id: str, to_id: str) -> Compaction:
        """Store a summary of `from_id` … `to_id` (on the hydrated active path) as an overlay.

        With a compaction already in effect, the new one starts where that one started.
        """
        return self.compaction.add(summary, from_id, to_id)

    @property
    def can_compact(self) -> bool:
        return self.compaction.fn is not None

    async def compact(self) -> Compaction | None:
        """Summarize now with the `on_compaction` function; None if it found nothing to do."""
        return await self.compaction.compact()

    async def compact_if_needed(self) -> Compaction | None:
        """Compact when `compact_after`'s threshold is passed; failures are logged, never raised."""
        return await self.compaction.compact_if_needed()

    def token_estimate(self) -> int:
        """Estimated tokens of the model's view plus the frozen system prompt (if rendered)."""
        return self.compaction.token_estimate()

    def status(self, phase: Literal["idle", "compacting"] = "idle") -> SessionChanged:
        """The `SessionChanged` event describing this session now."""
        return self.compaction.status(phase)

    async def announce(self) -> None:
        """Publish `status()` to whoever listens (nothing is estimated when nobody does)."""
        if self.fanout.listeners:
            await self.fanout.publish(self.status())

    # ---- internals ---------------------------------------------------------------------------

    def _load(self) -> list[Message]:
        return self._win().messages

    def _win(self) -> Window:
        if self._window is not None:
            return self._window
        leaf = self._leaf_seq()
        if leaf is None:
            self._window = Window()
            return self._window
        return self._read(leaf)

    def _leaf_seq(self) -> int | None:
        leaf = self.db.value("SELECT m.seq FROM think_sessions s JOIN think_messages m "
                             "ON m.session_id = s.id AND m.id = s.leaf_id WHERE s.id = ?", self.id)
        return None if leaf is None else int(leaf)

    def _read(self, leaf_seq: int) -> Window:
        """Load the window of the path ending at `leaf_seq` (it becomes the active path in memory)."""
        cold, self._cold_rows = self._cold_rows, None
        with paused_collector():  # thousands of rows and messages at once
            if cold is not None and cold[:2] == (self.version, leaf_seq):
                rows = cold[2]  # read by history_json() and not changed since
            else:
                rows = read_path_rows(self.db, leaf_seq, self.hydration_byte_budget)
            self._window = Window(rows)
        self.version += 1
        return self._window

    def _seq_of(self, message_id: str) -> int:
        seq = self.db.value("SELECT seq FROM think_messages WHERE session_id = ? AND id = ?", self.id, message_id)
        if seq is None:
            raise StorageError(f"no message {message_id!r} in session {self.id!r}")
        return int(seq)

    def _update_loaded(self, window: Window, position: int, clean: Message, body: bytes) -> None:
        old = window.stored[clean.id]
        if old != body:
            chunked.rewrite(self.db, window.seqs[position], clean.role, body, chunked.chunks_of(old))
            self.version += 1
        elif window.messages[position] is not clean:
            self.version += 1  # same content, new object: cached views must not keep the old one
        window.replace(position, clean, body)

    def _set_leaf(self, now: float) -> None:
        leaf = self._window.messages[-1].id if self._window and self._window.messages else None
        self.db.sql("INSERT INTO think_sessions (id, leaf_id, created_at, updated_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET leaf_id = excluded.leaf_id, updated_at = excluded.updated_at",
                    self.id, leaf, now, now)

    def _trim(self, window: Window) -> None:
        """Delete the oldest messages of the active path past `max_persisted_messages`."""
        limit = self.max_persisted_messages
        if limit is None or not window.messages or (len(window.messages) <= limit and not window.windowed):
            return
        if len(window.messages) > limit:
            first, keep = window.seqs[len(window.messages) - limit], 0
            window.drop_front(len(window.messages) - limit)
            self.version += 1
        else:
            first, keep = window.seqs[0], limit - len(window.messages)
        rows = self.db.sql(ANCESTORS_SQL + " SELECT seq, depth FROM anc WHERE seq IS NOT NULL", first)
        doomed = [r["seq"] for r in rows if r["depth"] > keep]
        if not doomed:
            return
        top = next((r["seq"] for r in rows if r["depth"] == keep), first) if keep else first
        self.db.execute_many("DELETE FROM think_messages WHERE seq = ?", [(s,) for s in doomed])
        self.db.sql("UPDATE think_messages SET parent = NULL WHERE seq = ?", top)
        window.windowed = keep > 0 and window.windowed
        self.version += 1
