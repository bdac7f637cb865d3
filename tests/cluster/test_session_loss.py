"""A process whose database session ends under it (here: an operator's `pg_terminate_backend`)
holds no agent's lock any more, so it stops: its sockets close (clients reconnect elsewhere),
`think serve` exits with status 4 for its supervisor, and another process takes its agents over
and finishes the turn it was running."""

from __future__ import annotations

from pathlib import Path

import httpx
import psycopg

from tests.cluster.nodes import cluster, owner
from tests.recovery.crash_agents import answer
from tests.recovery.crash_lanes import held_env, holds, turn_text
from tests.submissions.server_process import eventually
from think.client import AgentClient
from think.cluster.runtime import LOST_EXIT_CODE

TARGET = "tests.recovery.crash_agents:Crashy"


def _terminate_session(database: str, node_id: str) -> int:
    with psycopg.connect(database, autocommit=True) as conn:
        rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                            (f"think node {node_id}",)).fetchall()
    return sum(bool(row[0]) for row in rows)


def _reply(http: str) -> str:
    got = httpx.get(f"{http}/agents/crashy/s/get-messages", timeout=10)
    return (turn_text(got.json(), "q1") or "") if got.status_code == 200 else ""


async def test_a_process_that_lost_its_database_session_exits_and_its_turn_moves_on(database: str,
                                                                                     tmp_path: Path) -> None:
    gate, tools, env = held_env(tmp_path)
    env.pop("THINK_DATA_DIR")
    env["THINK_TEST_WAKE_AFTER"] = "600"  # the orphan sweep, not the keep-alive, brings it back
    with cluster([TARGET], database, env, size=2) as (a, b):
        async with AgentClient.connect(f"{a.ws}/agents/crashy/s", call_timeout=10) as client:
            turn = await client.send_chat("q1")
            await eventually(lambda: holds(tools) == 1)
            assert owner(database, "crashy/s") == "n0"
            assert _terminate_session(database, "n0") == 1
            await client.wait_closed()  # the process stopped serving the agent
        await eventually(lambda: a.process.poll() is not None, within=30)
        assert a.process.returncode == LOST_EXIT_CODE
        assert "Answer to q1: w0 w1 w2 w3 w4" in turn.text
        gate.unlink()
        await eventually(lambda: owner(database, "crashy/s") == "n1", within=20)  # taken over, unasked

        await eventually(lambda: answer("q1") in _reply(b.http), within=30)
        assert _reply(b.http).count("END.") == 1
