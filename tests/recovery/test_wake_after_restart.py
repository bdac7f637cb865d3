"""A turn a SIGKILL interrupted is finished after the restart even if no client ever reconnects:
the keep-alive alarm wakes the agent, and waking it recovers the turn."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio

from tests.recovery.crash_agents import answer
from tests.recovery.test_crash_loop import APP, _turn_text
from tests.submissions.server_process import eventually, serve_process
from think.client import AgentClient


def _stored(db: Path) -> tuple[list[dict[str, object]], int, int]:
    conn = sqlite3.connect(db)
    try:
        messages = [json.loads(b) for (b,) in conn.execute("SELECT body FROM think_messages")]
        fibers = conn.execute("SELECT count(*) FROM think_chat_fibers").fetchone()[0]
        wakes = conn.execute("SELECT count(*) FROM think_schedules WHERE id = 'think:chat-recovery'").fetchone()[0]
    finally:
        conn.close()
    return messages, fibers, wakes


async def test_a_killed_turn_finishes_after_a_restart_with_no_client_connected(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"THINK_DATA_DIR": str(data), "THINK_TEST_WAKE_AFTER": "1.0"}
    ready = "/agents/crashy/probe/get-messages"  # another agent: the served one is not touched
    with serve_process(APP, env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/crashy/solo", call_timeout=10) as client:
            await client.send_chat("alone")
            await anyio.sleep(0.45)  # in the tool call or the answer
            server.kill()
    db = next(data.glob("crashy/solo*.db"))
    messages, fibers, wakes = _stored(db)
    assert fibers == 1 and wakes == 1, "the kill did not land inside the turn"
    assert answer("alone") not in (_turn_text(messages, "alone") or "")

    with serve_process(APP, env, ready_path=ready):
        def finished() -> bool:
            messages, fibers, _ = _stored(db)
            return fibers == 0 and answer("alone") in (_turn_text(messages, "alone") or "")

        await eventually(finished, within=20)
        messages, _, _ = _stored(db)
        text = _turn_text(messages, "alone") or ""
        assert text.count("END.") == 1 and text.count("Let me check.") == 1
        await eventually(lambda: _stored(db)[2] == 0, within=10)  # with no fiber left the alarm lapses
