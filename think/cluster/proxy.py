"""Forwarding a request to the process that has its agent open.

A process of a cluster that gets a socket or a request for an agent another process has open
(`AgentElsewhere`) passes it on, frame by frame or body for body, to that process's own URL
(`think_nodes.url`); so any process behind any load balancer can take any connection, and every
socket of an agent still ends where its turns run. What the client sent is forwarded as sent
(headers too: the owner runs `on_before_connect` again); the owner decides everything.

A forwarded request is marked (`x-think-forwarded`); a process that gets one for an agent it
does not have open either (it changed hands in between) refuses it with 503 / close code 1013
("try again later") instead of forwarding it again. When the owner dies under a forwarded socket
the client's socket is closed with 1012 ("service restart"): the client reconnects, and whichever
process it lands on opens the agent (and recovers its turn).
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import httpx
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Data

from think.runtime.base import AgentElsewhere

log = logging.getLogger("think.cluster")

FORWARDED = "x-think-forwarded"
_HOP = {"host", "connection", "upgrade", "keep-alive", "transfer-encoding", "te", "trailer", "proxy-authorization",
        "proxy-authenticate", "content-length"}
_WS_OWN = {"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-accept"}


def _headers(source: Any, *, drop: set[str]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in source.headers.items() if k.lower() not in drop] + [(FORWARDED, "1")]


def forwarded(conn: Request | WebSocket) -> bool:
    return FORWARDED in conn.headers


async def forward_websocket(websocket: WebSocket, base_url: str) -> None:
    """Serve `websocket` by relaying it to the same path on `base_url` (the owner's URL)."""
    if forwarded(websocket):
        await _refuse(websocket, 1013)
        return
    target = base_url.replace("http", "ws", 1).rstrip("/") + websocket.url.path
    if websocket.url.query:
        target += "?" + websocket.url.query
    headers = _headers(websocket, drop=_HOP | _WS_OWN | {"sec-websocket-protocol"})
    protocols = [p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
    try:
        upstream = await connect(target, additional_headers=headers, subprotocols=protocols or None,  # type: ignore[arg-type]
                                 max_size=None, open_timeout=10, ping_interval=None, compression=None)
    except (OSError, InvalidStatus, TimeoutError) as exc:
        log.info("forwarding %s to %s failed: %r", websocket.url.path, base_url, exc)
        await _refuse(websocket, 1013)
        return
    async with upstream:
        await websocket.accept(subprotocol=upstream.subprotocol)
        async with anyio.create_task_group() as tasks:

            async def down() -> None:
                try:
                    async for message in upstream:
                        await _send(websocket, message)
                    code, reason = upstream.close_code or 1000, upstream.close_reason or ""
                except ConnectionClosed:
                    code, reason = 1012, "the agent's process went away; reconnect"
                if code == 1006:
                    code, reason = 1012, "the agent's process went away; reconnect"
                tasks.cancel_scope.cancel()
                try:
                    await websocket.close(code, reason)
                except RuntimeError:
                    pass  # the client has gone already

            async def up() -> None:
                while True:
                    message = await websocket.receive()
                    if message["type"] == "websocket.disconnect":
                        await upstream.close(message.get("code", 1000))
                        tasks.cancel_scope.cancel()
                        return
                    text = message.get("text")
                    try:
                        await upstream.send(text if text is not None else message.get("bytes") or b"")
                    except ConnectionClosed:
                        return  # down() closes the client

            tasks.start_soon(down)
            tasks.start_soon(up)


async def _send(websocket: WebSocket, message: Data) -> None:
    if isinstance(message, str):
        await websocket.send_text(message)
    else:
        await websocket.send_bytes(bytes(message))


async def _refuse(websocket: WebSocket, code: int) -> None:
    try:
        await websocket.send_denial_response(PlainTextResponse("The agent is changing hands; try again",
                                                                status_code=503))
    except RuntimeError:
        await websocket.close(code)


async def forward_http(request: Request, base_url: str) -> Response:
    """Answer `request` with the owner's answer to the same request."""
    if forwarded(request):
        return PlainTextResponse("The agent is changing hands; try again", status_code=503)
    client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))
    upstream = client.build_request(request.method, base_url.rstrip("/") + request.url.path,
                                    params=request.url.query or None, headers=_headers(request, drop=_HOP),
                                    content=await request.body())
    try:
        response = await client.send(upstream, stream=True)
    except httpx.HTTPError as exc:
        await client.aclose()
        log.info("forwarding %s to %s failed: %r", request.url.path, base_url, exc)
        return PlainTextResponse("The agent's process is out of reach; try again", status_code=503)

    async def done() -> None:
        await response.aclose()
        await client.aclose()

    headers = {k: v for k, v in response.headers.items() if k.lower() not in _HOP}
    return StreamingResponse(response.aiter_raw(), status_code=response.status_code, headers=headers,
                             background=BackgroundTask(done))


class ForwardingMiddleware:
    """Forwards any HTTP request whose handler found its agent open elsewhere (`AgentElsewhere`
    before the response started): the other protocols' endpoints (AI SDK SSE, …) need no code of
    their own for it. The body is read first, so it can be sent on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        replayed = False
        started = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def watch(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await self.app(scope, replay, watch)
        except AgentElsewhere as elsewhere:
            if started:
                raise

            async def once() -> Message:
                return {"type": "http.request", "body": body, "more_body": False}

            response = await forward_http(Request(scope, once), elsewhere.url)
            await response(scope, receive, send)
