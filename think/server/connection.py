"""`Connection` (one client socket) and `Connections` (broadcast with exclusions).

Sending never blocks the sender: a frame is put in the connection's queue and its own writer task
drains the queue into the socket, in order. A turn that broadcasts a chunk to ten tabs therefore
costs ten appends, and one stalled tab cannot slow the others; a tab that falls `max_queued`
frames behind is closed (1013) instead of growing memory without bound.
"""

from __future__ import annotations

import logging
import secrets
from collections import deque
from collections.abc import Collection, Iterator
from typing import Protocol

import anyio

from think.protocol.codec import encode_frame
from think.protocol.frames import ServerFrame
from think.server.refusals import RefusalLog

log = logging.getLogger("think.server")

MAX_QUEUED_FRAMES = 10_000
"""Frames waiting for one slow client before it is disconnected."""
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-"


def new_connection_id() -> str:
    """A random connection id, like partysocket's when `_pk` is missing."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(21))


class Socket(Protocol):
    """The two calls a connection makes on its socket (Starlette's `WebSocket` has both)."""

    async def send_text(self, data: str) -> None: ...

    async def close(self, code: int = 1000, reason: str | None = None) -> None: ...


class Connection:
    """One client socket: an id (`_pk`), an outgoing queue and the writer that drains it."""

    def __init__(self, socket: Socket, id: str, *, max_queued: int = MAX_QUEUED_FRAMES) -> None:
        self.id = id
        self.invalid_frames = 0
        """Frames from this client that we refused (it is closed after too many)."""
        self.calls_in_flight = 0
        self.refusals = RefusalLog(id)
        """What the server refused from this client, for the log (rate-limited)."""
        self._socket = socket
        self._queue: deque[str] = deque()
        self._max_queued = max_queued
        self._wakeup = anyio.Event()
        self._close: tuple[int, str] | None = None
        self._gone = False

    def __repr__(self) -> str:
        return f"Connection({self.id!r})"

    @property
    def closing(self) -> bool:
        """True once the socket is closed or a close was asked for; later sends are dropped."""
        return self._gone or self._close is not None

    def send(self, text: str) -> None:
        """Queue one text frame (never blocks)."""
        if self.closing:
            return
        if len(self._queue) >= self._max_queued:
            log.warning("connection %s is %d frames behind; closing it", self.id, len(self._queue))
            self._queue.clear()
            self.close(1013, "Too slow: the client fell too far behind")
            return
        self._queue.append(text)
        self._wakeup.set()

    def send_frame(self, frame: ServerFrame) -> None:
        self.send(encode_frame(frame))

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Close after the frames already queued are sent."""
        if self._close is None:
            self._close = (code, reason[:120])
            self._wakeup.set()

    def disconnected(self) -> None:
        """The peer is gone: drop what is queued, stop the writer."""
        self._gone = True
        self._queue.clear()
        self._wakeup.set()

    async def run_writer(self) -> None:
        """Drain the queue into the socket until closed (run it next to the reader)."""
        try:
            while not self._gone:
                while self._queue:
                    await self._socket.send_text(self._queue.popleft())
                if self._close is not None:
                    if not self._gone:
                        await self._socket.close(*self._close)
                    break
                if not self._gone:
                    self._wakeup = anyio.Event()
                    await self._wakeup.wait()
        except Exception as exc:  # the peer went away mid-send; the reader sees the disconnect
            log.debug("connection %s: send failed: %r", self.id, exc)
        finally:
            self._gone = True
            self._queue.clear()
            self.refusals.closed()


class Connections:
    """The open connections of one agent, in arrival order."""

    def __init__(self) -> None:
        self._all: dict[Connection, None] = {}

    def add(self, connection: Connection) -> None:
        self._all[connection] = None

    def remove(self, connection: Connection) -> None:
        self._all.pop(connection, None)

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[Connection]:
        return iter(tuple(self._all))

    def broadcast(self, text: str, *, exclude: str | Collection[str] | None = None) -> None:
        """Queue `text` on every connection whose id is not excluded."""
        if exclude is None:
            for connection in self._all:
                connection.send(text)
        elif isinstance(exclude, str):
            for connection in self._all:
                if connection.id != exclude:
                    connection.send(text)
        else:
            for connection in self._all:
                if connection.id not in exclude:
                    connection.send(text)
