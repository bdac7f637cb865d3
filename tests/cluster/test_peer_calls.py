"""Calls on an agent open in another process of the cluster, between real `think serve`
processes: a parent on one process calls its children open on another (a method, and a chat
turn whose callbacks stream back), an MCP `chat_<agent>` call reaches an agent open elsewhere,
and a peer call without the cluster's signature is refused."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest
from mcp import Client

from tests.cluster.nodes import cluster, owner
from tests.observe.collector import collector
from tests.submissions.server_process import eventually
from think.client import AgentClient
from think.client.calls import RpcError
from think.cluster.peers import PEER_PATH, SIGNATURE, SIGNED_AT

TARGETS = ["tests.cluster.peer_agents:Parent", "tests.cluster.peer_agents:Echo", "--mcp"]
CHILD = "counter/parent/p/sub/counter/c"


async def test_a_parent_calls_its_children_open_in_another_process(database: str) -> None:
    with cluster(TARGETS, database, {}, size=2) as (a, b):
        async with AgentClient.connect(f"{b.ws}/agents/parent/p", call_timeout=10) as on_b:
            await on_b.call("open_children")
        # the children stay open on n1 (sockets to them there); the parent lets go of n1 ...
        async with AgentClient.connect(f"{b.ws}/agents/parent/p/sub/counter/c", call_timeout=10) as child, \
                AgentClient.connect(f"{b.ws}/agents/parent/p/sub/echo/e", call_timeout=10):
            async with AgentClient.connect(f"{b.ws}/agents/parent/p", call_timeout=10) as on_b:
                await on_b.call("let_go")
            await eventually(lambda: owner(database, "parent/p") is None)
            async with AgentClient.connect(f"{a.ws}/agents/parent/p", call_timeout=10) as on_a:
                assert owner(database, "parent/p") == "n0"  # ... and opens on n0
                assert owner(database, CHILD) == "n1"
                assert await on_a.call("bump", 2) == {"count": 2, "process": "n1"}  # run where the child is
                assert await on_a.call("bump", 3) == {"count": 5, "process": "n1"}
                await eventually(lambda: child.state == {"count": 5})  # the child's own socket saw it
                asked = await on_a.call("ask", "hello")
                assert asked["status"] == "completed" and asked["text"] == "echo of hello, word by word"
                assert asked["chunks"] > 3 and asked["started"] == 1  # its callbacks, made on n0
            assert owner(database, "echo/parent/p/sub/echo/e") == "n1"


@asynccontextmanager
async def _slow_child_held_on(node: Any, database: str, parent: str) -> AsyncIterator[None]:
    """Parent `parent` opens its `slow` child on `node`, whose socket to the child keeps it open
    there while the parent lets go of `node` (so the parent's next opening is elsewhere)."""
    async with AgentClient.connect(f"{node.ws}/agents/parent/{parent}", call_timeout=10) as on_node:
        await on_node.call("open_slow")
    async with AgentClient.connect(f"{node.ws}/agents/parent/{parent}/sub/slow/s", call_timeout=10):
        async with AgentClient.connect(f"{node.ws}/agents/parent/{parent}", call_timeout=10) as on_node:
            await on_node.call("let_go")
        await eventually(lambda: owner(database, f"parent/{parent}") is None)
        yield


async def test_a_call_whose_agent_process_is_killed_fails_and_the_child_is_taken_over(database: str,
                                                                                      tmp_path: Path) -> None:
    gate, log = tmp_path / "gate", tmp_path / "log.txt"
    gate.write_text("held")
    env = {"THINK_TEST_GATE": str(gate), "THINK_TEST_TOOLS": str(log), "THINK_TEST_WAKE_AFTER": "600"}
    with cluster(TARGETS, database, env, size=2) as (a, b):
        async with _slow_child_held_on(b, database, "k"), \
                AgentClient.connect(f"{a.ws}/agents/parent/k", call_timeout=30) as on_a:
            asking = await on_a.start_call("ask_slow", "q")
            await eventually(lambda: log.exists() and "hold" in log.read_text())  # the turn runs on n1
            assert owner(database, "slow/parent/k/sub/slow/s") == "n1"
            b.kill()  # SIGKILL of the child's process in the middle of the call
            with pytest.raises(RpcError, match="went away during the call"):
                await asking.wait()
        gate.unlink()
        # the child's interrupted turn is taken over by the surviving process, unasked
        await eventually(lambda: owner(database, "slow/parent/k/sub/slow/s") == "n0", within=20)


async def test_aborting_and_deleting_a_child_open_in_another_process_happen_there(database: str,
                                                                                 tmp_path: Path) -> None:
    gate, log = tmp_path / "gate", tmp_path / "log.txt"
    gate.write_text("held")
    env = {"THINK_TEST_GATE": str(gate), "THINK_TEST_TOOLS": str(log)}
    child = "slow/parent/d/sub/slow/s"
    with cluster(TARGETS, database, env, size=2) as (a, b):
        async with _slow_child_held_on(b, database, "d"), \
                AgentClient.connect(f"{a.ws}/agents/parent/d", call_timeout=30) as on_a:
            asking = await on_a.start_call("ask_slow", "q")
            await eventually(lambda: log.exists() and "hold" in log.read_text())  # the turn runs on n1
            assert owner(database, child) == "n1"
            assert await on_a.call("abort_slow") == 1  # its turn, stopped on n1 (the gate still holds)
            assert await asking.wait() == "part "  # the partial reply it kept
        async with AgentClient.connect(f"{a.ws}/agents/parent/d", call_timeout=30) as on_a:
            assert owner(database, child) == "n1"  # no socket to it any more, but still open on n1
            assert await on_a.call("delete_slow") == {"deleted": True, "children": []}
        with psycopg.connect(database, autocommit=True) as conn:  # closed on n1, and gone from the cluster
            assert conn.execute("SELECT count(*) FROM think_agents WHERE agent_key = %s", (child,)).fetchone() == (0,)
        gate.unlink()


async def test_a_call_in_another_process_joins_the_callers_trace(database: str) -> None:
    with collector() as otlp:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_BSP_SCHEDULE_DELAY": "50"}
        with cluster(TARGETS, database, env, size=2) as (a, b):
            async with AgentClient.connect(f"{b.ws}/agents/parent/t", call_timeout=10) as on_b:
                await on_b.call("open_children")
            async with AgentClient.connect(f"{b.ws}/agents/parent/t/sub/echo/e", call_timeout=10):
                async with AgentClient.connect(f"{b.ws}/agents/parent/t", call_timeout=10) as on_b:
                    await on_b.call("let_go")
                await eventually(lambda: owner(database, "parent/t") is None)
                async with AgentClient.connect(f"{a.ws}/agents/parent/t", call_timeout=10) as on_a:
                    assert await on_a.call("run_tool", "traced") == "echo of traced, word by word"
                assert owner(database, "echo/parent/t/sub/echo/e") == "n1"  # the turn ran on n1

                def spans(name: str) -> list[Any]:
                    with otlp.lock:
                        return [s for s in otlp.spans if s.name == name]

                await eventually(lambda: spans("sub_agent echo") and spans("invoke_agent echo"))
        [call] = spans("sub_agent echo")  # on n0, around the call
        [turn] = spans("invoke_agent echo")  # on n1, the child's turn
        assert turn.trace_id == call.trace_id and turn.parent_span_id == call.span_id


async def test_an_mcp_chat_call_reaches_an_agent_open_in_another_process(database: str) -> None:
    with cluster(TARGETS, database, {}, size=2) as (a, b):
        async with AgentClient.connect(f"{a.ws}/agents/echo/x", call_timeout=10):
            assert owner(database, "echo/x") == "n0"
            deltas: list[str] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                deltas.append(message or "")

            async with Client(f"{b.http}/mcp") as mcp:
                result = await mcp.call_tool("chat_echo", {"name": "x", "message": "over mcp"},
                                             progress_callback=on_progress)
                assert result.content[0].text == "echo of over mcp, word by word"  # type: ignore[union-attr]
                assert "".join(deltas) == "echo of over mcp, word by word"
                resource = await mcp.read_resource("think://echo/x/messages")
                assert [m["role"] for m in orjson.loads(resource.contents[0].text)] == ["user", "assistant"]  # type: ignore[union-attr]
            assert owner(database, "echo/x") == "n0"


def test_a_peer_call_needs_the_cluster_signature(database: str) -> None:
    with cluster(TARGETS, database, {}, size=1) as (a,):
        body = orjson.dumps({"op": "call", "class": "echo", "name": "x", "payload": {"method": "clear_messages"}})
        forged = {SIGNED_AT: repr(time.time()), SIGNATURE: "0" * 64}
        for headers in ({}, forged):
            answer = httpx.post(a.http + PEER_PATH, content=body, headers=headers, timeout=10)
            assert answer.status_code == 403
        assert owner(database, "echo/x") is None  # nothing was opened for it
