"""Stored servers connect after the turn that woke the agent (`mcp_restore_delay`): the SDK's
per-connection work (~15 ms of the event loop each) never runs inside that turn. A turn that
waits for them, or a direct call, starts them at once; left alone they connect by themselves."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import anyio

from tests.mcp.conftest import DemoServer
from tests.mcp.helpers import until
from tests.mcp.test_client_tools import Mcp, tool_part
from think.models.base import ModelRequest
from think.runtime.embedded import EmbeddedRuntime
from think.testing.models import Reply, ScriptedModel

SEEN: list[list[bool]] = []
"""What the model saw while it answered: whether each server's connection had started."""


class Deferred(Mcp):
    agent_class_name = "deferred"
    mcp_restore_delay = 600.0  # longer than any test: only what asks for the servers starts them


class Watching(Deferred):
    def get_model(self) -> ScriptedModel:
        def answer(request: ModelRequest) -> Reply:
            SEEN.append([c.started for c in self.mcp.connections.values()])
            return "hello"

        return ScriptedModel(answer)


class WaitingDeferred(Deferred):
    wait_for_mcp_connections: ClassVar[bool] = True


class SoonDeferred(Deferred):
    mcp_restore_delay = 0.05


async def stored(data_dir: Path, url: str, count: int) -> None:
    runtime = EmbeddedRuntime(data_dir)
    async with runtime.lease(Deferred, "a") as agent:
        for i in range(count):
            await agent.add_mcp_server(f"s{i}", url, timeout=0)  # an added server connects at once
        assert all(c.started for c in agent.mcp.connections.values())
    await runtime.close()


async def test_the_first_turn_runs_before_stored_servers_connect(data_dir: Path, demo_server: DemoServer) -> None:
    await stored(data_dir, demo_server.url, 3)
    SEEN.clear()
    runtime = EmbeddedRuntime(data_dir)
    try:
        async with runtime.lease(Watching, "a") as agent:
            result = await agent.chat("hi")
            assert result.status == "completed"
            assert SEEN == [[False, False, False]]  # none had begun while the turn ran
            assert {s["state"] for s in agent.mcp_servers()} == {"connecting"}
    finally:
        await runtime.close()


async def test_a_turn_that_waits_for_them_or_a_direct_call_starts_them_at_once(
        data_dir: Path, demo_server: DemoServer) -> None:
    await stored(data_dir, demo_server.url, 2)
    runtime = EmbeddedRuntime(data_dir)
    try:
        async with runtime.lease(WaitingDeferred, "a") as agent:
            with anyio.fail_after(60):  # far less than the 600 s delay
                await agent.chat('use s0_echo {"text": "now"}')
            assert tool_part(agent).output == "echo: now"
        await runtime.close()
        runtime = EmbeddedRuntime(data_dir)
        async with runtime.lease(Deferred, "a") as agent:
            first = agent.mcp_servers()[0]["id"]
            assert not agent.mcp.connections[first].started
            try:
                await agent.call_mcp_tool(first, "echo", {"text": "x"})
            except ConnectionError:
                pass  # not connected yet: the call asked for it, so it is connecting now
            assert agent.mcp.connections[first].started
            await until(agent, lambda: agent.mcp.connections[first].state == "ready", what="the asked-for server")
    finally:
        await runtime.close()


async def test_left_alone_they_connect_by_themselves(data_dir: Path, demo_server: DemoServer) -> None:
    await stored(data_dir, demo_server.url, 2)
    runtime = EmbeddedRuntime(data_dir)
    try:
        async with runtime.lease(SoonDeferred, "a") as agent:
            await until(agent, lambda: all(s["state"] == "ready" for s in agent.mcp_servers()), what="both ready")
    finally:
        await runtime.close()
