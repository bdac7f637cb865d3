"""End-to-end fixtures: a real uvicorn server per test, and clients that talk to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.chat.agents import EchoChat, StatefulChat
from tests.chat.live_server import LiveServer, serve_in_thread
from tests.chat.tool_fixtures import tool_connect, tool_server  # noqa: F401 - fixtures for the tool tests
from think.client import AgentClient
from think.runtime import EmbeddedRuntime
from think.server import create_app

Connect = Callable[..., AbstractAsyncContextManager[AgentClient]]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    """`EchoChat` and `StatefulChat` served from a fresh data directory."""
    app = create_app([EchoChat, StatefulChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        yield live


@pytest.fixture
def connect(server: LiveServer) -> Connect:
    """`async with connect("room") as client:` a connected AgentClient (agent `echo-chat`)."""

    @asynccontextmanager
    async def open_client(name: str = "room", *, agent: str = "echo-chat",
                          **options: Any) -> AsyncIterator[AgentClient]:
        options.setdefault("turn_timeout", 20)
        options.setdefault("wait_timeout", 5)
        async with AgentClient.connect(server.agent_url(agent, name), **options) as client:
            yield client

    return open_client
