"""A second crash right after a restart, inside the recovery's backoff, loses nothing: a crash at
any point of a recovery counts as an attempt and the next start goes on with it."""

from __future__ import annotations

from pathlib import Path

from tests.recovery.crash_agents import answer
from tests.recovery.crash_lanes import APP, held_env, holds, turn_text
from tests.recovery.test_wake_after_restart import _rows, _stored
from tests.submissions.server_process import eventually, serve_process
from think.client import AgentClient
from think.protocol.frames import ChatRecovering, ServerFrame


async def test_a_kill_in_the_backoff_after_an_acked_replay_still_finishes_the_turn(tmp_path: Path) -> None:
    data = tmp_path / "data"
    gate, tools, env = held_env(tmp_path)
    ready = "/agents/crashy/probe/get-messages"
    with serve_process(APP, env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/crashy/backoff", call_timeout=10) as client:
            await client.send_chat("late")
            await eventually(lambda: holds(tools) == 1)  # mid-answer, held there
            server.kill()
    gate.unlink()
    db = next(data.glob("crashy/backoff*.db"))
    assert [a for (a,) in _rows(db, "SELECT attempt FROM think_chat_fibers")] == [0]

    # Restart with a backoff far longer than the test: the recovery turn cannot have started
    # when the client has the replay (ACKed, so the stream is delivered) and the recovering frame.
    recovering: list[bool] = []

    def seen(frame: ServerFrame) -> None:
        if isinstance(frame, ChatRecovering):
            recovering.append(frame.recovering)

    with serve_process(APP, {**env, "THINK_TEST_BACKOFF": "600"}, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/crashy/backoff", call_timeout=10,
                                       on_frame=seen) as client:
            await client.wait_until(lambda c: c.resumed is not None and c.resumed.done and True in recovering)
            server.kill()
    [(attempt, status)] = _rows(db, "SELECT f.attempt, s.status FROM think_chat_fibers f "
                                    "JOIN think_streams s ON s.request_id = f.request_id")
    assert (attempt, status) == (1, "completed")  # the attempt was spent; the replay was delivered

    with serve_process(APP, env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/crashy/backoff", call_timeout=10):
            pass  # a client comes back (the keep-alive alarm would wake the agent later anyway)
        await eventually(lambda: not _rows(db, "SELECT 1 FROM think_chat_fibers")
                         and answer("late") in (turn_text(_stored(db)[0], "late") or ""), within=30)
    text = turn_text(_stored(db)[0], "late") or ""
    assert text.count("END.") == 1 and text.count("Answer to") == 1, text
    starts = [line for line in tools.read_text().splitlines() if line.startswith("start")]
    assert len(starts) == 1, starts
