"""A turn a SIGKILL interrupted is finished after the restart even if no client ever reconnects:
the keep-alive alarm wakes the agent, and waking it recovers the turn."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.recovery.crash_agents import answer
from tests.recovery.crash_lanes import APP, held_env, holds, turn_text
from tests.submissions.server_process import eventually, serve_process
from think.client import AgentClient


def _rows(db: Path, query: str) -> list[tuple[Any, ...]]:
    """The rows of `query`, read as the (possibly dead) server left the database."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def _stored(db: Path) -> tuple[list[dict[str, object]], int, int]:
    messages = [json.loads(b) for (b,) in _rows(db, "SELECT body FROM think_messages")]
    [(fibers,)] = _rows(db, "SELECT count(*) FROM think_chat_fibers")
    [(wakes,)] = _rows(db, "SELECT count(*) FROM think_schedules WHERE id = 'think:chat-recovery'")
    return messages, fibers, wakes


async def test_a_killed_turn_finishes_after_a_restart_with_no_client_connected(tmp_path: Path) -> None:
    data = tmp_path / "data"
    gate, tools, env = held_env(tmp_path)
    ready = "/agents/crashy/probe/get-messages"  # another agent: the served one is not touched
    with serve_process(APP, env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/crashy/solo", call_timeout=10) as client:
            await client.send_chat("alone")
            await eventually(lambda: holds(tools) == 1)  # mid-answer, held there
            server.kill()
    gate.unlink()
    db = next(data.glob("crashy/solo*.db"))
    messages, fibers, wakes = _stored(db)
    assert fibers == 1 and wakes == 1, "the kill did not land inside the turn"
    assert answer("alone") not in (turn_text(messages, "alone") or "")

    with serve_process(APP, env, ready_path=ready):
        def finished() -> bool:
            messages, fibers, _ = _stored(db)
            return fibers == 0 and answer("alone") in (turn_text(messages, "alone") or "")

        await eventually(finished, within=20)
        messages, _, _ = _stored(db)
        text = turn_text(messages, "alone") or ""
        assert text.count("END.") == 1 and text.count("Let me check.") == 1
        await eventually(lambda: _stored(db)[2] == 0, within=10)  # with no fiber left the alarm lapses


async def test_a_killed_agent_tool_run_is_collected_not_run_again_after_a_restart(tmp_path: Path) -> None:
    """The parent's turn waits on a child (an agent tool) when the process dies. After the restart,
    with no client, the parent's recovery runs the interrupted call again, which re-attaches to the
    same child: the child's own recovery finishes its answer and the parent summarizes it. The
    child's answer and its tool run happen once."""
    data = tmp_path / "data"
    gate, tools, env = held_env(tmp_path)
    ready = "/agents/crashy/probe/get-messages"
    with serve_process(APP, env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/boss/b1", call_timeout=10) as client:
            await client.send_chat("deep")
            await eventually(lambda: holds(tools) == 1)  # the child's tool has run; its answer is held
            server.kill()
    gate.unlink()
    parent_db = data / "boss" / "b1.db"
    [child_db] = data.glob("crashy/boss%2Fb1%2Fsub%2Fcrashy%2F*.db")
    assert _stored(parent_db)[1] == 1 and _stored(child_db)[1] == 1, "the kill did not land in the child's turn"

    with serve_process(APP, env, ready_path=ready):
        def finished() -> bool:
            messages, fibers, _ = _stored(parent_db)
            return fibers == 0 and "Summary: " in (turn_text(messages, "deep") or "")

        await eventually(finished, within=30)
    parent_text = turn_text(_stored(parent_db)[0], "deep") or ""
    # The child's answer reaches the parent as its text parts joined by blank lines (the kill split
    # the child's reply into the partial's part and the continuation's): compare the words.
    words = " ".join(parent_text.split())
    assert words.count("Summary: ") == 1 and words.count(answer("deep")) == 1, parent_text
    child_messages, child_fibers, _ = _stored(child_db)
    assert child_fibers == 0
    assert [m["role"] for m in child_messages].count("user") == 1
    child_text = turn_text(child_messages, "deep") or ""
    assert child_text.count("END.") == 1 and answer("deep") in child_text
    starts = [line for line in tools.read_text().splitlines() if line.startswith("start")]
    assert len(starts) == 1, starts  # the child's tool ran once; no second child turn
    assert list(data.glob("crashy/boss%2Fb1%2Fsub%2Fcrashy%2F*.db")) == [child_db]  # no second child


async def test_a_turn_killed_again_during_its_recovery_still_finishes_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    gate, tools, env = held_env(tmp_path)
    env["THINK_TEST_BACKOFF"] = "0.05"
    ready = "/agents/crashy/probe/get-messages"
    with serve_process(APP, env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/crashy/twice", call_timeout=10) as client:
            await client.send_chat("again")
            await eventually(lambda: holds(tools) == 1)
            server.kill()
    db = next(data.glob("crashy/twice*.db"))

    def attempts() -> list[int]:
        return [a for (a,) in _rows(db, "SELECT attempt FROM think_chat_fibers")]

    assert attempts() == [0]
    for restart in (1, 2):  # the recovery turn is killed too, held where the first one was
        with serve_process(APP, env, ready_path=ready) as server:
            await eventually(lambda r=restart: holds(tools) == r + 1, within=20)  # type: ignore[misc]
            server.kill()
        assert attempts() and max(attempts()) == restart
    gate.unlink()
    with serve_process(APP, env, ready_path=ready):
        await eventually(lambda: not attempts() and answer("again") in (turn_text(_stored(db)[0], "again") or ""),
                         within=20)
    text = turn_text(_stored(db)[0], "again") or ""
    assert text.count("END.") == 1 and text.count("Answer to") == 1, text
    starts = [line for line in tools.read_text().splitlines() if line.startswith("start")]
    assert len(starts) == len(set(starts)) and len(starts) <= 1
