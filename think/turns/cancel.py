"""`Cancellations`: the cancel scope of each running request, by request id."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio


class Cancellations:
    """Cancel scopes of running turns, by request id.

    A scope absorbs its own cancellation, so "the user pressed stop" is a normal ending of the
    turn while a server shutdown still propagates.
    """

    def __init__(self) -> None:
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._signals: dict[str, anyio.Event] = {}
        self._early: set[str] = set()

    def signal(self, request_id: str) -> anyio.Event:
        """The cancel signal of a running turn: an event set when the turn is cancelled."""
        return self._signals.setdefault(request_id, anyio.Event())

    @contextmanager
    def scope(self, request_id: str) -> Iterator[anyio.CancelScope]:
        with anyio.CancelScope() as scope:
            self._scopes[request_id] = scope
            if request_id in self._early:  # cancelled while it was still queued
                self._early.discard(request_id)
                self.signal(request_id).set()
                scope.cancel()
            try:
                yield scope
            finally:
                self._scopes.pop(request_id, None)
                self._signals.pop(request_id, None)

    def cancel(self, request_id: str) -> bool:
        """Cancel a running turn; True if there was one."""
        if scope := self._scopes.get(request_id):
            self.signal(request_id).set()
            scope.cancel()
            return True
        return False

    def cancel_pending(self, request_id: str) -> None:
        """Cancel a turn that is admitted but has not started yet, as soon as it starts."""
        if not self.cancel(request_id):
            self._early.add(request_id)

    def forget(self, request_id: str) -> None:
        """Drop the signal of a turn that ended without running (it never had a scope)."""
        if request_id not in self._scopes:
            self._signals.pop(request_id, None)
            self._early.discard(request_id)

    def cancelled_early(self, request_id: str) -> bool:
        """True for a turn cancelled before it started (`cancel_pending`)."""
        return request_id in self._early

    def cancel_all(self) -> int:
        scopes = list(self._scopes.items())
        for request_id, scope in scopes:
            self.signal(request_id).set()
            scope.cancel()
        return len(scopes)

    @property
    def running(self) -> list[str]:
        return list(self._scopes)
