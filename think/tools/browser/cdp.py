"""A thin Chrome DevTools Protocol client over one WebSocket (`websockets`).

    connection = await CdpConnection.connect("ws://127.0.0.1:9222/devtools/browser/…")
    target = await connection.send("Target.createTarget", {"url": "about:blank"})
    remove = connection.on("Fetch.requestPaused", handler, session_id=session)

Flat sessions only (`Target.attachToTarget {flatten: true}`): every message carries its
`sessionId`, so one connection drives the browser and all its pages. Commands are matched to
answers by id; an error answer raises `CdpError`; when the socket closes (the browser exited or
was killed), every waiting command raises `BrowserClosed` and `closed` is set. Event handlers
run in the reader's loop: plain functions inline, coroutine functions as tracked tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import websockets
from websockets.asyncio.client import ClientConnection

log = logging.getLogger("think.browser")

Handler = Callable[[dict[str, Any], "str | None"], "Awaitable[None] | None"]
"""An event handler: `handler(params, session_id)`."""
MAX_MESSAGE = 512 * 1024 * 1024
"""Largest message accepted (screenshots and page bodies come base64-encoded)."""


class CdpError(Exception):
    """The browser answered a command with an error."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: {message} ({code})")
        self.method = method
        self.code = code
        self.message = message


class BrowserClosed(ConnectionError):
    """The connection to the browser is gone (it exited, crashed or was killed)."""


class CdpConnection:
    """One WebSocket to a browser (see the module docs)."""

    def __init__(self, socket: ClientConnection) -> None:
        self._socket = socket
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._handlers: dict[tuple[str, str | None], list[Handler]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = asyncio.Event()
        self._reader = asyncio.get_running_loop().create_task(self._read(), name="cdp-reader")

    @classmethod
    async def connect(cls, url: str, *, timeout: float = 10.0) -> CdpConnection:  # noqa: ASYNC109
        try:
            socket = await asyncio.wait_for(
                websockets.connect(url, max_size=MAX_MESSAGE, ping_interval=None, open_timeout=timeout,
                                   proxy=None, compression=None), timeout)
        except (OSError, TimeoutError, websockets.InvalidHandshake) as exc:
            raise BrowserClosed(f"cannot connect to the browser at {url}: {exc}") from exc
        return cls(socket)

    @property
    def subscriptions(self) -> int:
        """How many (event, session) pairs have handlers."""
        return len(self._handlers)

    @property
    def is_closed(self) -> bool:
        return self.closed.is_set()

    async def send(self, method: str, params: dict[str, Any] | None = None, *, session_id: str | None = None,
                   timeout: float | None = None) -> dict[str, Any]:  # noqa: ASYNC109
        """The result of one command; raises `CdpError`, `BrowserClosed` or `TimeoutError`."""
        if self.closed.is_set():
            raise BrowserClosed(f"{method}: the browser connection is closed")
        call_id = next(self._ids)
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = (method, future)
        try:
            await self._socket.send(orjson.dumps(message).decode())
            if timeout is None:
                return await future
            return await asyncio.wait_for(future, timeout)
        except websockets.ConnectionClosed as exc:  # noticed here before the reader did: closed for all
            self._fail_waiting("the browser connection closed")
            raise BrowserClosed(f"{method}: the browser connection closed") from exc
        finally:
            self._waiting.pop(call_id, None)

    def on(self, method: str, handler: Handler, *, session_id: str | None = None) -> Callable[[], None]:
        """Call `handler` for every `method` event of `session_id` (None: browser-level events);
        returns the function that removes it."""
        key = (method, session_id)
        self._handlers.setdefault(key, []).append(handler)

        def remove() -> None:
            handlers = self._handlers.get(key, [])
            if handler in handlers:
                handlers.remove(handler)
            if not handlers:
                self._handlers.pop(key, None)

        return remove

    def forget_session(self, session_id: str) -> None:
        """Drop every handler of a detached session."""
        for key in [k for k in self._handlers if k[1] == session_id]:
            del self._handlers[key]

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._socket.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        for task in list(self._tasks):
            task.cancel()
        self._fail_waiting("the browser connection was closed")

    async def _read(self) -> None:
        try:
            async for raw in self._socket:
                message = orjson.loads(raw)
                call_id = message.get("id")
                if call_id is not None:
                    self._answer(call_id, message)
                elif "method" in message:
                    self._dispatch(message["method"], message.get("params") or {}, message.get("sessionId"))
        except websockets.ConnectionClosed:
            pass
        except Exception:
            log.exception("the CDP reader failed")
        finally:
            self._fail_waiting("the browser connection closed")

    def _answer(self, call_id: int, message: dict[str, Any]) -> None:
        waiting = self._waiting.get(call_id)
        if waiting is None or waiting[1].done():
            return
        method, future = waiting
        error = message.get("error")
        if error is not None:
            future.set_exception(CdpError(method, int(error.get("code", 0)), str(error.get("message", ""))))
        else:
            future.set_result(message.get("result") or {})

    def _dispatch(self, method: str, params: dict[str, Any], session_id: str | None) -> None:
        for handler in list(self._handlers.get((method, session_id), ())):
            try:
                result = handler(params, session_id)
            except Exception:
                log.exception("CDP handler for %s failed", method)
                continue
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._tasks.add(task)
                task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("CDP handler task failed", exc_info=task.exception())

    def _fail_waiting(self, reason: str) -> None:
        self.closed.set()
        for method, future in list(self._waiting.values()):
            if not future.done():
                future.set_exception(BrowserClosed(f"{method}: {reason}"))
