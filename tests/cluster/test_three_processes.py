"""Three real `think serve --database` processes over one PostgreSQL: a socket on any process
reaches the agent where it is open, a tab on another process joins a running turn live with the
same `seq`s, and `kill -9` of the process running the turn leaves another one to finish it (its
tool call not run again), with nobody reconnecting to the dead process."""

from __future__ import annotations

from pathlib import Path

import httpx
import psycopg

from tests.cluster.nodes import cluster, owner
from tests.recovery.crash_agents import answer
from tests.recovery.crash_lanes import held_env, holds, tool_log, turn_messages, turn_text
from tests.submissions.server_process import eventually
from think.client import AgentClient
from think.protocol.frames import ChatResponse, ServerFrame

TARGET = "tests.recovery.crash_agents:Crashy"
JOBS = "tests.recovery.crash_agents:Jobs"


def _transcript(url: str) -> list[dict[str, object]]:
    response = httpx.get(url, timeout=10)
    assert response.status_code == 200, response.text
    return list(response.json())


def _wal_rows(database: str, key: str) -> int:
    with psycopg.connect(database) as conn:
        row = conn.execute("SELECT count(*) FROM think_agent_wal WHERE agent_key = %s", (key,)).fetchone()
    return int(row[0]) if row else 0


def _seqs(frames: list[ServerFrame], request_id: str) -> list[int]:
    return [f.seq for f in frames if isinstance(f, ChatResponse) and f.id == request_id and f.seq is not None]


async def test_a_turn_streams_to_every_process_and_survives_the_kill_of_its_own(database: str,
                                                                                tmp_path: Path) -> None:
    gate, tools, env = held_env(tmp_path)
    env.pop("THINK_DATA_DIR")
    env["THINK_TEST_WAKE_AFTER"] = "600"  # no keep-alive alarm within the test: the orphan sweep recovers it
    with cluster([TARGET], database, env) as (a, b, c):
        seen_b: list[ServerFrame] = []
        seen_c: list[ServerFrame] = []
        async with AgentClient.connect(f"{a.ws}/agents/crashy/k", call_timeout=10):
            assert owner(database, "crashy/k") == "n0"  # opened where the first socket landed
            async with AgentClient.connect(f"{b.ws}/agents/crashy/k", call_timeout=10,
                                           on_frame=seen_b.append) as on_b:
                turn = await on_b.send_chat("q1")
                await eventually(lambda: holds(tools) == 1)  # the turn runs on n0, held mid-answer
                async with AgentClient.connect(f"{c.ws}/agents/crashy/k", call_timeout=10,
                                               on_frame=seen_c.append) as on_c:
                    assert on_c.resumed is not None and on_c.resumed.request_id == turn.request_id
                    await eventually(lambda: on_c.resumed is not None and on_c.resumed.text == turn.text)
                    # the joining tab got every chunk the live one had, each seq once, in order
                    live, joined = _seqs(seen_b, turn.request_id), _seqs(seen_c, turn.request_id)
                    assert live == list(range(len(live))) and joined == live
                    assert owner(database, "crashy/k") == "n0"
                    a.kill()  # SIGKILL of the process running the turn
                    await on_b.wait_closed()
                    await on_c.wait_closed()
        assert "Answer to q1: w0 w1 w2 w3 w4" in turn.text
        gate.unlink()
        # Nobody reconnects or asks: a surviving process finds the orphan and takes it over ...
        await eventually(lambda: owner(database, "crashy/k") in ("n1", "n2"), within=20)

        def finished() -> bool:  # ... and its recovery finishes the turn
            text = turn_text(_transcript(f"{b.http}/agents/crashy/k/get-messages"), "q1") or ""
            return answer("q1") in text

        await eventually(finished, within=30)
        text = turn_text(_transcript(f"{c.http}/agents/crashy/k/get-messages"), "q1") or ""
        assert text.count("END.") == 1 and text.count("Let me check.") == 1, text
        starts = [line for line in tools.read_text().splitlines() if line.startswith("start")]
        assert len(starts) == 1, starts  # the completed tool call was not run again
        # a tab that connects now, anywhere, gets the end-of-turn transcript
        async with AgentClient.connect(f"{b.ws}/agents/crashy/k", call_timeout=10) as late:
            assert answer("q1") in (turn_text([m.to_json() for m in late.messages], "q1") or "")


async def test_a_process_stopped_with_sigterm_hands_its_running_turn_over(database: str, tmp_path: Path) -> None:
    gate, tools, env = held_env(tmp_path)
    env.pop("THINK_DATA_DIR")
    with cluster([TARGET], database, env, size=2) as (a, b):
        async with AgentClient.connect(f"{a.ws}/agents/crashy/d", call_timeout=10) as on_a:
            await on_a.send_chat("q2")
            await eventually(lambda: holds(tools) == 1)
            assert owner(database, "crashy/d") == "n0"
            a.stop()  # SIGTERM: a clean shutdown in the middle of the turn
        # it let the agent go on the way out (closed, its WAL rows kept for the next process) ...
        assert owner(database, "crashy/d") is None and _wal_rows(database, "crashy/d") > 0
        gate.unlink()  # ... and the turn's keep-alive alarm, in Postgres, wakes it on the other process

        def finished() -> bool:
            text = turn_text(_transcript(f"{b.http}/agents/crashy/d/get-messages"), "q2") or ""
            return answer("q2") in text

        await eventually(finished, within=30)
        text = turn_text(_transcript(f"{b.http}/agents/crashy/d/get-messages"), "q2") or ""
        assert text.count("END.") == 1 and text.count("Let me check.") == 1, text
        assert len([line for line in tools.read_text().splitlines() if line.startswith("start")]) == 1


async def test_a_durable_submission_survives_the_kill_of_the_process_running_it(database: str,
                                                                               tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.write_text("held")
    tools = tmp_path / "tools.txt"
    env = {"THINK_TEST_TOOLS": str(tools), "THINK_TEST_GATE": str(gate), "THINK_TEST_WAKE_AFTER": "600"}
    with cluster([JOBS], database, env, size=2) as (a, b):
        async with AgentClient.connect(f"{a.ws}/agents/jobs/j", call_timeout=10) as client:
            await client.call("submit", "job1")
            await eventually(lambda: {n for e, _, n in tool_log(tools) if e == "start"} == {"fetch", "record"})
            a.kill()  # SIGKILL while a rerun tool (fetch) and a reported tool (record) run
        gate.unlink()
        await eventually(lambda: owner(database, "jobs/j") == "n1", within=20)  # taken over, unasked

        def parts() -> dict[str, dict[str, object]]:
            stored = _transcript(f"{b.http}/agents/jobs/j/get-messages")
            return {str(p["type"])[5:]: p for m in turn_messages(stored, "job1") or []
                    for p in m["parts"] if str(p["type"]).startswith("tool-")}

        await eventually(lambda: parts().get("fetch", {}).get("state") == "output-available", within=30)
        found = parts()
        assert found["fetch"]["output"] == "fetched job1"  # recovery="rerun": run again
        assert found["record"]["state"] == "output-error"  # the default: reported as interrupted
        assert [n for e, _, n in tool_log(tools) if e == "start"].count("record") == 1
