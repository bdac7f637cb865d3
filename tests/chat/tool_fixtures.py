"""Fixtures for the tool, approval and resume tests: `ToolChat` and `DebouncedChat` on a live server.

Import them into a test module: `from tests.chat.tool_fixtures import tool_connect, tool_server`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.chat.live_server import LiveServer, serve_in_thread
from tests.chat.tool_agents import DebouncedChat, ToolChat
from think.client import AgentClient
from think.runtime import EmbeddedRuntime
from think.server import create_app

Connect = Callable[..., AbstractAsyncContextManager[AgentClient]]


@pytest.fixture
def tool_server(tmp_path: Path) -> Iterator[LiveServer]:
    app = create_app([ToolChat, DebouncedChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        yield live


@pytest.fixture
def tool_connect(tool_server: LiveServer) -> Connect:
    """`async with tool_connect("room") as client:` a client of agent `tool-chat`."""

    @asynccontextmanager
    async def open_client(name: str = "room", *, agent: str = "tool-chat",
                          **options: Any) -> AsyncIterator[AgentClient]:
        options.setdefault("turn_timeout", 20)
        options.setdefault("wait_timeout", 5)
        async with AgentClient.connect(tool_server.agent_url(agent, name), **options) as client:
            yield client

    return open_client
