"""`think serve` finishes a turn a SIGKILL interrupted, for the instance named `default` too:
describing the served agents at start-up wakes none of them (their recovery runs in the server)."""

from __future__ import annotations

from pathlib import Path

from tests.recovery.crash_agents import answer
from tests.recovery.crash_lanes import held_env, holds, turn_text
from tests.recovery.test_wake_after_restart import _rows, _stored
from tests.submissions.server_process import eventually, think_serve_process
from think.client import AgentClient

TARGET = "tests.recovery.crash_agents:Crashy"
READY = "/agents/crashy/probe/get-messages"


async def test_think_serve_finishes_an_interrupted_turn_of_the_default_instance(tmp_path: Path) -> None:
    data = tmp_path / "data"
    gate, tools, env = held_env(tmp_path)
    env["THINK_TEST_WAKE_AFTER"] = "600"  # no alarm wakes it during the test: only a client does
    with think_serve_process([TARGET], env, ready_path=READY) as server:
        async with AgentClient.connect(f"{server.ws}/agents/crashy/default", call_timeout=10) as client:
            await client.send_chat("hi")
            await eventually(lambda: holds(tools) == 1)  # mid-answer, held there
            server.kill()
    gate.unlink()
    db = data / "crashy" / "default.db"
    assert [a for (a,) in _rows(db, "SELECT attempt FROM think_chat_fibers")] == [0]

    with think_serve_process([TARGET], env, ready_path=READY) as server:
        # Nobody has touched `default` yet: starting the server spent no attempt on it.
        assert [a for (a,) in _rows(db, "SELECT attempt FROM think_chat_fibers")] == [0]
        async with AgentClient.connect(f"{server.ws}/agents/crashy/default", call_timeout=10):
            await eventually(lambda: not _rows(db, "SELECT 1 FROM think_chat_fibers")
                             and answer("hi") in (turn_text(_stored(db)[0], "hi") or ""), within=30)
    text = turn_text(_stored(db)[0], "hi") or ""
    assert text.count("END.") == 1 and text.count("Answer to") == 1, text
    assert len([line for line in tools.read_text().splitlines() if line.startswith("start")]) == 1
