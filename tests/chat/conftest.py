"""End-to-end fixtures: a real uvicorn server per test, and clients that talk to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chat.agents import EchoChat, StatefulChat
from tests.chat.live_server import Connect, LiveServer, connector, serve_in_thread
from tests.chat.tool_fixtures import tool_connect, tool_server  # noqa: F401 - fixtures for the tool tests
from think.runtime import EmbeddedRuntime
from think.server import create_app


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    """`EchoChat` and `StatefulChat` served from a fresh data directory."""
    app = create_app([EchoChat, StatefulChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        yield live


@pytest.fixture
def connect(server: LiveServer) -> Connect:
    """`async with connect("room") as client:` a connected AgentClient (agent `echo-chat`)."""
    return connector(server, "echo-chat")
