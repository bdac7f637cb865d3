"""`TurnQueue`: chat turns run one at a time per agent, in arrival order."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from think.turns.turn import ActiveTurn

LIVE: weakref.WeakSet[TurnQueue] = weakref.WeakSet()
"""Every agent's queue in this process (what the `think.turns.queued` gauge reads)."""


class TurnQueue:
    """Run turns one at a time, in arrival order.

    After `reset()`, turns that were already waiting are skipped and reported as stale: clearing
    a chat must not let a queued turn write into the new, empty conversation.
    """

    def __init__(self) -> None:
        # anyio.Lock hands the lock to waiters in arrival order; turn order relies on it.
        self._lock = anyio.Lock()
        self.generation = 0
        self.waiting = 0
        self.active_request_id: str | None = None
        self.active_turn: ActiveTurn | None = None
        """The turn running now (set by the runner; `Think.active_turn`)."""
        LIVE.add(self)

    @property
    def busy(self) -> bool:
        return self._lock.locked() or self.waiting > 0

    def reset(self) -> None:
        """Make every turn that is waiting now stale."""
        self.generation += 1

    @asynccontextmanager
    async def slot(self, request_id: str) -> AsyncIterator[bool]:
        """Wait for our turn; yields False when the queue was reset while we waited."""
        generation = self.generation
        self.waiting += 1
        try:
            await self._lock.acquire()
        finally:
            self.waiting -= 1
        try:
            self.active_request_id = request_id
            yield generation == self.generation
        finally:
            self.active_request_id = None
            self._lock.release()
