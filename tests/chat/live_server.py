"""A real uvicorn server on 127.0.0.1 (random port) in a background thread, for end-to-end tests.

The listening socket is bound and listening before the thread starts, so clients can connect at
once: the kernel queues them until uvicorn has run the app's lifespan and starts accepting.
The WebSocket protocol is the one `think serve` runs (`think.server.websocket`);
`THINK_TEST_WS=websockets` (or `websockets-sansio`, `wsproto`) runs the tests on one of uvicorn's.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from think.client import AgentClient
from think.server.websocket import WebSocketProtocol

Connect = Callable[..., AbstractAsyncContextManager[AgentClient]]


class LiveServer:
    def __init__(self, app: ASGIApp, port: int) -> None:
        self.app = app
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.ws_base_url = f"ws://127.0.0.1:{port}"

    def agent_url(self, agent: str, name: str, *, prefix: str = "agents") -> str:
        return f"{self.ws_base_url}/{prefix}/{agent}/{name}"

    def http_url(self, agent: str, name: str, rest: str = "", *, prefix: str = "agents") -> str:
        tail = f"/{rest}" if rest else ""
        return f"{self.base_url}/{prefix}/{agent}/{name}{tail}"


@contextmanager
def serve_in_thread(app: ASGIApp, **config: Any) -> Iterator[LiveServer]:
    """Run `app` under uvicorn until the block ends."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(512)
    port = sock.getsockname()[1]
    # uvicorn's frame limit above the app's `max_frame_bytes`, as `think serve` sets it
    options: dict[str, Any] = {"lifespan": "on", "log_level": "warning", "ws_max_size": 33 * 1024 * 1024,
                               "ws": os.environ.get("THINK_TEST_WS") or WebSocketProtocol} | config
    server = uvicorn.Server(uvicorn.Config(app, **options))
    failure: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # surfaced when the block ends
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"uvicorn:{port}", daemon=True)
    thread.start()
    try:
        yield LiveServer(app, port)
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
    assert not thread.is_alive(), "the server did not stop within 15 s"
    if failure:
        raise failure[0]


def connector(server: LiveServer, agent: str) -> Connect:
    """`async with connect("room") as client:` a connected AgentClient of `agent` (another with
    `agent=`), with test-sized timeouts unless given."""

    @asynccontextmanager
    async def open_client(name: str = "room", *, agent: str = agent, **options: Any) -> AsyncIterator[AgentClient]:
        options.setdefault("turn_timeout", 20)
        options.setdefault("wait_timeout", 5)
        async with AgentClient.connect(server.agent_url(agent, name), **options) as client:
            yield client

    return open_client
