"""A turn's end is one commit: its reply, the end of its resumable stream and the removal of its
recovery fiber are stored together, so a kill leaves all three or none."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from tests.turns.end_kill_agent import ANSWER, Weather
from think.runtime.embedded import EmbeddedRuntime

ROOT = Path(__file__).resolve().parents[2]


def _transactions(statements: list[str]) -> list[list[str]]:
    """The statements grouped by explicit transaction (BEGIN … COMMIT); a lone statement is its own."""
    out: list[list[str]] = []
    current: list[str] | None = None
    for sql in statements:
        word = sql.split(None, 1)[0].upper()
        if word == "BEGIN":
            current = []
        elif word == "COMMIT":
            assert current is not None
            out.append(current)
            current = None
        elif current is not None:
            current.append(sql)
        else:
            out.append([sql])
    return out


async def test_a_turns_reply_its_stream_end_and_its_fiber_removal_are_one_commit(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path)
    try:
        async with runtime.lease(Weather, "w") as agent:
            await agent.chat("Weather in Lisbon?")  # the first turn sets everything up
            seen: list[str] = []
            agent.db.connection.set_trace_callback(seen.append)
            result = await agent.chat("And tomorrow?")
            agent.db.connection.set_trace_callback(None)
            assert result.status == "completed" and result.message is not None
    finally:
        await runtime.close()
    reply_id = result.message.id
    ends = [t for t in _transactions(seen)
            if any(s.startswith("INSERT INTO think_messages") and reply_id in s for s in t)]
    assert len(ends) == 1, ends
    end = ends[0]
    assert any(s.startswith("UPDATE think_streams SET status = 'completed'") for s in end), end
    assert any(s.startswith("DELETE FROM think_chat_fibers") for s in end), end
    writes_after = [t for t in _transactions(seen)[_transactions(seen).index(end) + 1:]
                    if any(s.split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE") for s in t)]
    assert writes_after == []  # nothing of the turn is written after its last commit


async def test_a_kill_right_after_the_reply_is_stored_leaves_a_finished_turn_that_is_not_run_again(
        tmp_path: Path) -> None:
    process = await anyio.run_process([sys.executable, "-m", "tests.turns.end_kill_agent", str(tmp_path),
                                       "after-reply"],
                                      cwd=ROOT, check=False)
    assert process.returncode == -9, process.stdout  # SIGKILLed by its own listener, after the reply's commit
    model = Weather.model
    model.requests.clear()
    runtime = EmbeddedRuntime(tmp_path)
    try:
        async with runtime.lease(Weather, "w") as agent:
            with anyio.fail_after(60):
                await agent.wait_until_stable()
            assert [m.text for m in agent.messages if m.role == "assistant"] == [ANSWER]
            assert agent.recovery.store.all() == []  # the fiber went with the reply
            assert model.requests == []  # nothing was recovered: the model was not called again
            (row,) = agent.db.sql("SELECT status FROM think_streams")
            assert row["status"] == "completed"  # a reconnecting client is not offered an orphan
    finally:
        await runtime.close()


async def test_a_kill_right_after_the_question_is_stored_is_answered_after_the_restart(tmp_path: Path) -> None:
    process = await anyio.run_process([sys.executable, "-m", "tests.turns.end_kill_agent", str(tmp_path),
                                       "after-question"], cwd=ROOT, check=False)
    assert process.returncode == -9, process.stdout
    runtime = EmbeddedRuntime(tmp_path)
    try:
        async with runtime.lease(Weather, "w") as agent:
            with anyio.fail_after(60):
                await agent.wait_until_stable()
            assert [m.role for m in agent.messages] == ["user", "assistant"]
            assert [m.text for m in agent.messages if m.role == "assistant"] == [ANSWER]
    finally:
        await runtime.close()
