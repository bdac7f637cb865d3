"""What a client waits on: a chat turn's stream (`ChatTurn`) and an RPC call (`RpcCall`).

Both are filled in by the connection's reader, frame by frame; callers iterate them for what
streams and await them for the end. Every wait is bounded by the object's `timeout`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator
from typing import Any, Generic, TypeVar

import anyio
import orjson

from think.errors import ThinkError
from think.messages import JSONObject, Message
from think.protocol.client_codec import outcome_of
from think.protocol.frames import ChatResponse, Outcome, RpcResponse
from think.stream.fold import Fold


class RpcError(ThinkError):
    """The agent answered an RPC call with an error (its text is the message)."""


class Signal:
    """Wakes every waiter each time `fire()` is called."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def fire(self) -> None:
        self._event.set()
        self._event = anyio.Event()

    async def wait(self) -> None:
        await self._event.wait()


async def _wait_until(signal: Signal, deadline: float | None) -> None:
    # The cancel scope covers only the wait, never a `yield` of the generator that calls this.
    with anyio.fail_after(None if deadline is None else max(0.0, deadline - anyio.current_time())):
        await signal.wait()


T = TypeVar("T")


class _Streamed(Generic[T]):
    """What a reader fills in: chunks that arrive one by one, then the end."""

    timeout: float | None
    chunks: list[T]
    done: bool
    _changed: Signal

    def _failure(self) -> Exception | None:
        """Raised by the iteration once done (None: it ended well)."""
        return None

    async def __aiter__(self) -> AsyncIterator[T]:
        """The chunks from the first, as they arrive; TimeoutError after `self.timeout` seconds."""
        deadline = None if self.timeout is None else anyio.current_time() + self.timeout
        index = 0
        while True:
            while index < len(self.chunks):
                yield self.chunks[index]
                index += 1
            if self.done:
                if (failure := self._failure()) is not None:
                    raise failure
                return
            await _wait_until(self._changed, deadline)

    async def _until_done(self) -> None:
        with anyio.fail_after(self.timeout):
            while not self.done:
                await self._changed.wait()


class ChatTurn(_Streamed[JSONObject]):
    """One chat request's stream as a client sees it: chunks, the folded reply, the ending.

    Iterate it for the chunks (from the first, as they arrive); await it for the end.
    """

    def __init__(self, request_id: str, *, timeout: float | None = 120.0) -> None:
        self.request_id = request_id
        self.timeout = timeout
        """Seconds `wait()` waits for the end before TimeoutError (None: forever)."""
        self.message = Message(id=request_id, role="assistant")  # the `start` chunk brings the real id
        """The assistant message built from the chunks so far."""
        self.chunks: list[JSONObject] = []
        self.outcome: Outcome | None = None
        """`completed`, `aborted` or `error` once done (None if the connection dropped first)."""
        self.error: str | None = None
        """The error text, for a turn that failed."""
        self.message_ids: tuple[str, ...] = ()
        """The user message ids the server reported with the done frame."""
        self.continuation = False
        self.replayed = False
        """True when (part of) the stream came as a replay after a resume."""
        self.done = False
        self._fold = Fold(self.message)
        self._last_seq = -1
        self._changed = Signal()

    def __repr__(self) -> str:
        return f"ChatTurn({self.request_id!r}, done={self.done}, outcome={self.outcome!r})"

    @property
    def text(self) -> str:
        return self.message.text

    def _apply(self, frame: ChatResponse) -> None:
        if self.done:
            return
        self.continuation = self.continuation or frame.continuation
        self.replayed = self.replayed or frame.replay
        if frame.done:
            self.done = True
            self.outcome = outcome_of(frame)
            self.message_ids = frame.message_ids or self.message_ids
            if frame.error and frame.body:
                self.error = frame.body
        elif frame.error:
            self.error = frame.body
        elif frame.body:
            if frame.seq is not None:
                if frame.seq <= self._last_seq:
                    return  # already have it (a replay overlapping live frames)
                self._last_seq = frame.seq
            chunk = orjson.loads(frame.body)
            if isinstance(chunk, dict):
                self._fold.apply(chunk)
                self.chunks.append(chunk)
        self._changed.fire()

    def _abort(self, reason: str) -> None:
        if not self.done:
            self.done = True
            self.error = self.error or reason
            self._changed.fire()

    async def wait(self) -> ChatTurn:
        """Wait for the done frame (TimeoutError after `self.timeout` seconds)."""
        await self._until_done()
        return self

    def __await__(self) -> Generator[Any, None, ChatTurn]:
        return self.wait().__await__()


class RpcCall(_Streamed[Any]):
    """An RPC call in flight: iterate it for streamed chunks (RpcError if it fails); `result`
    once done."""

    def __init__(self, call_id: str, method: str, *, timeout: float | None = 30.0) -> None:
        self.id = call_id
        self.method = method
        self.timeout = timeout
        self.chunks: list[Any] = []
        self.result: Any = None
        self.error: str | None = None
        self.done = False
        self._changed = Signal()

    def _apply(self, frame: RpcResponse) -> None:
        if not frame.success:
            self.error, self.done = frame.error or "RPC failed", True
        elif frame.done:
            self.result, self.done = frame.result, True
        else:
            self.chunks.append(frame.result)
        self._changed.fire()

    def _abort(self, reason: str) -> None:
        if not self.done:
            self.error, self.done = reason, True
            self._changed.fire()

    def _failure(self) -> Exception | None:
        return RpcError(self.error) if self.error is not None else None

    async def wait(self) -> Any:
        """The final result; RpcError if the call failed, TimeoutError after `self.timeout` s."""
        await self._until_done()
        if self.error is not None:
            raise RpcError(f"{self.method}: {self.error}")
        return self.result
