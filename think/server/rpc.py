"""`rpc` frames: calling an agent's `@callable` methods, plain and streaming.

    class Counter(Think):
        @callable
        async def add(self, a: int, b: int) -> int:
            return a + b

        @callable(streaming=True)
        async def count(self, stream: StreamingResponse, n: int) -> None:
            for i in range(n):
                stream.send(i)
            stream.end("done")

Errors are answers, never crashes: an unknown method is "Method X does not exist", a method
without `@callable` is "Method X is not callable", and an exception raised by the method is
sent as its message. So is a result nested deeper than the depth limit (`think.protocol.limits`).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from think.protocol.codec import encode_frame
from think.protocol.frames import RpcRequest, RpcResponse
from think.protocol.limits import TooDeep, check_depth
from think.runtime.rpc import callable_info

log = logging.getLogger("think.server")

Reply = Callable[[str], None]
"""Sends one encoded frame to the caller."""


def _encode(response: RpcResponse) -> str:
    try:
        check_depth(response.result, "The result")
        return encode_frame(response)
    except TooDeep as exc:
        return encode_frame(RpcResponse(id=response.id, success=False, error=str(exc)))
    except TypeError as exc:
        return encode_frame(RpcResponse(id=response.id, success=False,
                                        error=f"The result is not JSON-serializable: {exc}"))


class StreamingResponse:
    """What a streaming `@callable` gets as its first argument: `send` chunks, then `end`.

    `send(chunk)` delivers `{"success":true,"result":chunk,"done":false}`; `end(final)` the last
    frame with `done:true`; `error(message)` a failure. After `end` or `error` the stream is
    closed and further calls raise RuntimeError. A method that returns without closing it is
    ended with its return value; one that raises is ended with the error.
    """

    def __init__(self, request_id: str, reply: Reply) -> None:
        self.id = request_id
        self._reply = reply
        self.closed = False

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this stream is closed (end() or error() was called)")

    def send(self, chunk: Any) -> None:
        self._check_open()
        self._reply(_encode(RpcResponse(id=self.id, success=True, result=chunk, done=False)))

    def end(self, final: Any = None) -> None:
        self._check_open()
        self.closed = True
        self._reply(_encode(RpcResponse(id=self.id, success=True, result=final, done=True)))

    def error(self, message: str) -> None:
        self._check_open()
        self.closed = True
        self._reply(_encode(RpcResponse(id=self.id, success=False, error=message)))


def find_callable(agent: object, method: str) -> tuple[Callable[..., Any] | None, str | None, bool]:
    """The bound method to call, or the error text; and whether it streams."""
    target = getattr(agent, method, None) if method.isidentifier() else None
    if target is None:
        return None, f"Method {method} does not exist", False
    info = callable_info(target)
    if info is None or not callable(target):
        return None, f"Method {method} is not callable", False
    return target, None, bool(info.get("streaming"))


async def call_method(agent: object, frame: RpcRequest, reply: Reply) -> None:
    """Run one RPC call and send its answer(s) through `reply`. Never raises (but cancellation)."""
    target, problem, streaming = find_callable(agent, frame.method)
    if target is None:
        reply(_encode(RpcResponse(id=frame.id, success=False, error=problem)))
        return
    stream = StreamingResponse(frame.id, reply) if streaming else None
    try:
        result = target(stream, *frame.args) if stream is not None else target(*frame.args)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        log.info("rpc %s(%d args) raised %r", frame.method, len(frame.args), exc)
        message = str(exc) or type(exc).__name__
        if stream is None:
            reply(_encode(RpcResponse(id=frame.id, success=False, error=message)))
        elif not stream.closed:
            stream.error(message)
        return
    if stream is None:
        reply(_encode(RpcResponse(id=frame.id, success=True, result=result, done=True)))
    elif not stream.closed:
        stream.end(result)
