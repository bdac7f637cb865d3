"""`MCPConnection.stop()` ends the connection's task even when a session absorbs the cancellation."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from think import _tasks
from think.mcp.backoff import Backoff
from think.mcp.connection import MCPConnection
from think.mcp.store import ServerSpec


class Absorbing(MCPConnection):
    """A session whose cleanup swallows the first cancellation and returns as if the server hung up."""

    def __init__(self) -> None:
        super().__init__(ServerSpec(id="s1", name="absorbing", transport="streamable-http",
                                    url="http://127.0.0.1:9/mcp"), lambda _c: None, backoff=Backoff())
        self.sessions = 0
        self.in_session = asyncio.Event()

    async def _session(self) -> None:
        self.sessions += 1
        self.in_session.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            return  # absorbed


async def test_stopping_a_connection_whose_session_absorbs_the_cancellation_makes_no_new_attempt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tasks, "REDELIVER_AFTER", 3600)  # the stop flag alone must end the task
    connection = Absorbing()
    connection.start()
    await connection.in_session.wait()
    with anyio.fail_after(30):
        await connection.stop()
    assert connection.sessions == 1  # no reconnect after the stop
    assert not connection.started
