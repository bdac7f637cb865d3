"""Fixtures for the tool, approval and resume tests: `ToolChat` and `DebouncedChat` on a live server.

Import them into a test module: `from tests.chat.tool_fixtures import tool_connect, tool_server`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chat.live_server import Connect, LiveServer, connector, serve_in_thread
from tests.chat.tool_agents import DebouncedChat, ToolChat
from think.runtime import EmbeddedRuntime
from think.server import create_app


@pytest.fixture
def tool_server(tmp_path: Path) -> Iterator[LiveServer]:
    app = create_app([ToolChat, DebouncedChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        yield live


@pytest.fixture
def tool_connect(tool_server: LiveServer) -> Connect:
    """`async with tool_connect("room") as client:` a client of agent `tool-chat`."""
    return connector(tool_server, "tool-chat")
