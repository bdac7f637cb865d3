"""Non-destructive compaction: summaries stored as overlays over ranges of messages.

A compaction says "the model sees `summary` instead of the messages from `from_id` to `to_id`".
The messages stay stored (and searchable); only the model's view of the session changes. A new
compaction always extends from the first message the previous one covered, folding the previous
summary and the newer messages into one, so at most one overlay applies to a branch.

Token counts are estimates (`think.context.tokens`).
"""

from __future__ import annotations

import logging
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from think.context.tokens import TokenCounter, estimate_message_tokens, estimate_tokens
from think.errors import ConfigurationError, StorageError
from think.messages import Message, TextPart
from think.stream.fanout import SessionChanged

if TYPE_CHECKING:
    from think.sessions.session import Session

log = logging.getLogger("think.sessions")

__all__ = ["COMPACTION_ID_PREFIX", "CompactFn", "Compaction", "CompactionContext", "CompactionResult", "Compactor",
           "TokenCounter", "apply_overlay", "estimate_message_tokens", "estimate_tokens", "is_compaction_message"]

COMPACTION_ID_PREFIX = "compaction_"


@dataclass(frozen=True)
class Compaction:
    """A stored summary of the messages `from_id` … `to_id` (inclusive) of one session."""

    id: str
    summary: str
    from_id: str
    to_id: str
    created_at: float

    def as_message(self) -> Message:
        """The synthetic message the model sees in place of the range."""
        return Message(id=f"{COMPACTION_ID_PREFIX}{self.id}", role="assistant",
                       parts=[TextPart(text=self.summary)])


@dataclass(frozen=True)
class CompactionResult:
    """What a compaction function returns: a summary of `from_id` … `to_id`."""

    summary: str
    from_id: str
    to_id: str


@dataclass(frozen=True, kw_only=True)
class CompactionContext:
    """Passed to a compaction function along with the active path (oldest first)."""

    session: Session
    previous: Compaction | None
    """The compaction in effect now: fold its summary into the new one."""
    token_counter: TokenCounter


CompactFn = Callable[[Sequence[Message], CompactionContext], Awaitable[CompactionResult | None]]
"""`fn(messages, ctx)` → a summary of a range of `messages`, or None to leave them as they are."""
CompactionErrorHandler = Callable[[BaseException], Awaitable[None] | None]


def is_compaction_message(message: Message) -> bool:
    return message.id.startswith(COMPACTION_ID_PREFIX)


def apply_overlay(path: Sequence[Message], index_of: Callable[[str], int | None], compaction: Compaction | None,
                  *, before_window: bool) -> list[Message]:
    """The model's view of `path`: the range the compaction covers replaced by its summary.

    `before_window` says the compaction ends before the first hydrated message (it covers only
    messages that are not in memory): the summary then simply comes first.
    """
    if compaction is None:
        return list(path)
    if before_window:
        return [compaction.as_message(), *path]
    end = index_of(compaction.to_id)
    assert end is not None
    start = index_of(compaction.from_id) or 0  # the start may be older than the window
    return [*path[:start], compaction.as_message(), *path[end + 1:]]


class Compactor:
    """One session's compaction: its function and threshold, its stored overlays, and the model's
    view of the session with the overlay in effect (cached until the session's `version` moves)."""

    def __init__(self, session: Session) -> None:
        # A weak reference: the session owns its compactor, and a cycle between them would keep a
        # dropped session (and every message of its window) alive until a full collection.
        self._session = weakref.ref(session)
        self.fn: CompactFn | None = None
        self.threshold: int | None = None
        self.on_error: CompactionErrorHandler | None = None
        self.counter: TokenCounter = estimate_message_tokens
        self._stored: list[Compaction] | None = None  # newest first
        self._view: tuple[int, Compaction | None, list[Message] | None, int] | None = None
        self._tokens: tuple[int, int, int] | None = None  # (version, messages counted, total)

    @property
    def session(self) -> Session:
        session = self._session()
        if session is None:
            raise StorageError("this compactor's session no longer exists")
        return session

    def all(self) -> list[Compaction]:
        if self._stored is None:
            rows = self.session.db.sql("SELECT id, summary, from_id, to_id, created_at FROM think_compactions "
                                       "WHERE session_id = ? ORDER BY created_at DESC, rowid DESC", self.session.id)
            self._stored = [Compaction(**row) for row in rows]
        return self._stored

    def forget(self) -> None:
        self._stored = None
        self._view = None
        self._tokens = None

    def view(self) -> list[Message]:
        session = self.session
        path = session.history()
        view = self._view
        if view is None or view[0] != session.version:
            compaction, before_window = self._find_overlay()
            overlay = None if compaction is None else apply_overlay(path, session.index_of, compaction,
                                                                    before_window=before_window)
            view = self._view = (session.version, compaction, overlay, len(path))
        overlay, counted = view[2], view[3]
        if overlay is None:
            return path
        if counted < len(path):  # appends since: they follow the overlay as they follow the path
            overlay.extend(path[counted:])
            self._view = (*view[:3], len(path))
        return overlay

    def in_effect(self) -> Compaction | None:
        self.view()
        assert self._view is not None
        return self._view[1]

    def _find_overlay(self) -> tuple[Compaction | None, bool]:
        compactions = self.all()
        if not compactions:
            return None, False
        for compaction in compactions:
            if self.session.index_of(compaction.to_id) is not None:
                return compaction, False
        # The window may start after a compacted range: is its end older than the window?
        older = self.session.ids_before_window()
        for compaction in compactions:
            if compaction.to_id in older:
                return compaction, True
        return None, False

    def add(self, summary: str, from_id: str, to_id: str) -> Compaction:
        session = self.session
        previous = self.in_effect()
        end = session.index_of(to_id)
        if end is None:
            raise StorageError(f"cannot compact up to {to_id!r}: it is not on the active path in memory")
        if previous is not None:
            previous_end = session.index_of(previous.to_id)
            if previous_end is not None and end <= previous_end:
                raise StorageError(f"compaction must end after {previous.to_id!r}, where the one in effect ends")
            from_id = previous.from_id
        else:
            start = session.index_of(from_id)
            if start is None or start > end:
                raise StorageError(f"cannot compact from {from_id!r}: it must be on the active path, before {to_id!r}")
        compaction = Compaction(id=str(uuid.uuid4()), summary=summary, from_id=from_id, to_id=to_id,
                                created_at=time.time())
        session.db.sql("INSERT INTO think_compactions (id, session_id, summary, from_id, to_id, created_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", compaction.id, session.id, summary, from_id, to_id,
                       compaction.created_at)
        self._stored = None
        session.version += 1
        return compaction

    async def compact(self) -> Compaction | None:
        session = self.session
        if self.fn is None:
            raise ConfigurationError(f"session {session.id!r} cannot compact: register a function with "
                                     "session.on_compaction(fn), for example in configure_session")
        await session.fanout.publish(self.status("compacting"))
        try:
            ctx = CompactionContext(session=session, previous=self.in_effect(), token_counter=self.counter)
            result = await self.fn(list(session.history()), ctx)
            return None if result is None else self.add(result.summary, result.from_id, result.to_id)
        finally:
            await session.fanout.publish(self.status("idle"))

    async def compact_if_needed(self) -> Compaction | None:
        if self.fn is None or self.threshold is None or self.token_estimate() <= self.threshold:
            return None
        try:
            return await self.compact()
        except Exception as exc:
            log.exception("automatic compaction of session %r failed; the conversation goes on", self.session.id)
            if self.on_error is not None:
                outcome = self.on_error(exc)
                if outcome is not None:
                    await outcome
            return None

    def token_estimate(self) -> int:
        view = self.view()
        version = self.session.version
        cached = self._tokens
        if cached is not None and cached[0] == version and cached[1] <= len(view):
            total = cached[2] + sum(self.counter(m) for m in view[cached[1]:])
        else:
            total = sum(self.counter(m) for m in view)
        self._tokens = (version, len(view), total)
        return total + self.session.context.prompt_tokens()

    def status(self, phase: Literal["idle", "compacting"] = "idle") -> SessionChanged:
        return SessionChanged(phase=phase, token_estimate=self.token_estimate(), token_threshold=self.threshold,
                              session_id=self.session.id)
