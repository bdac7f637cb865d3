"""SIGKILL the server between accepting a submission and running it, restart it, and the
submission completes exactly once: nobody has to talk to the agent for that to happen."""

from __future__ import annotations

from pathlib import Path

from tests.submissions.server_process import eventually, serve_process
from think.client import AgentClient

APP = "tests.submissions.server_app:app"


def calls(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_a_killed_server_finishes_accepted_submissions_exactly_once_after_a_restart(tmp_path: Path) -> None:
    log = tmp_path / "model-calls.txt"
    env = {"THINK_DATA_DIR": str(tmp_path / "data"), "THINK_TEST_CALLS": str(log), "THINK_TEST_SLOW": "120"}
    ready = "/agents/ledgered/probe/get-messages"

    with serve_process(APP, env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/ledgered/jobs", call_timeout=10) as client:
            slow = await client.call("submit", "slow first", "job-1")
            second = await client.call("submit", "second", "job-2")
            retried = await client.call("submit", "second", "job-2")
            assert slow["accepted"] and second["accepted"] and slow["status"] == "pending"
            assert (retried["submissionId"], retried["accepted"]) == (second["submissionId"], False)
            await eventually(lambda: "slow first" in calls(log))
            assert (await client.call("inspect", second["submissionId"]))["status"] == "pending"
            assert (await client.call("inspect", slow["submissionId"]))["status"] == "running"
        server.kill()  # mid-turn for the first, before the second ever ran
    assert calls(log) == ["slow first"]

    with serve_process(APP, env, ready_path=ready):
        # Nobody connects: the server's alarm loop wakes the agent, which resumes its ledger.
        await eventually(lambda: "second" in calls(log))
    with serve_process(APP, env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/ledgered/jobs", call_timeout=10) as client:
            for accepted in (slow, second):
                current = await client.call("inspect", accepted["submissionId"])
                assert current["status"] == "completed", current
            transcript = await client.call("transcript")
    assert calls(log).count("second") == 1  # the submission that was pending ran exactly once
    assert calls(log).count("slow first") == 2  # the interrupted one was finished after the restart
    users = [line for line in transcript if line.startswith("user:")]
    assert users == ["user: slow first", "user: second"]  # never duplicated
    assert transcript.count("assistant: Echo: second") == 1
    assert sum("Echo: slow first" in line for line in transcript) == 1
    assert transcript.index("user: second") > max(i for i, line in enumerate(transcript) if "slow first" in line)


def _tool_log(path: Path) -> list[tuple[str, str, str]]:
    """(event, call id, tool) per line the crash agents' tools logged."""
    out = []
    for line in calls(path):
        event, call_id, *name = line.split()
        out.append((event, call_id, name[0] if name else "record"))
    return out


async def test_a_killed_submission_reruns_its_rerun_tool_and_reports_the_other(tmp_path: Path) -> None:
    """SIGKILL while a submission's turn runs `fetch` (`recovery="rerun"`) and `record` (the
    default, "report"): after the restart `fetch` runs again and `record` is reported interrupted,
    as a chat turn's recovery does (the same code settles both)."""
    import json
    import sqlite3

    from tests.recovery.crash_agents import answer

    data, tools, gate = tmp_path / "data", tmp_path / "tools.txt", tmp_path / "gate"
    env = {"THINK_DATA_DIR": str(data), "THINK_TEST_TOOLS": str(tools), "THINK_TEST_GATE": str(gate)}
    ready = "/agents/crashy/probe/get-messages"
    gate.write_text("held")
    with serve_process("tests.recovery.crash_app:app", env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/jobs/j1", call_timeout=10) as client:
            submission_id = await client.call("submit", "job")
            await eventually(lambda: {name for event, _, name in _tool_log(tools) if event == "start"}
                             == {"fetch", "record"})
            server.kill()  # both tools are held mid-run
    gate.unlink()
    db = data / "jobs" / "j1.db"

    def stored() -> tuple[str, list[dict[str, object]]]:
        conn = sqlite3.connect(db)
        try:
            [(status,)] = conn.execute("SELECT status FROM think_submissions WHERE id = ?", (submission_id,))
            messages = [json.loads(b) for (b,) in conn.execute("SELECT body FROM think_messages")]
        finally:
            conn.close()
        return status, messages

    assert stored()[0] == "running"
    with serve_process("tests.recovery.crash_app:app", env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/jobs/j1", call_timeout=10):
            await eventually(lambda: stored()[0] == "completed")
    messages = stored()[1]
    parts = {str(p["type"]): p for m in messages for p in m["parts"] if str(p["type"]).startswith("tool-")}  # type: ignore[attr-defined]
    assert (parts["tool-fetch"]["state"], parts["tool-fetch"].get("output")) == ("output-available", "fetched job")
    assert parts["tool-record"]["state"] == "output-error"
    assert "interrupted" in str(parts["tool-record"]["errorText"])
    text = "".join(str(p.get("text", "")) for m in messages if m["role"] == "assistant" for p in m["parts"])  # type: ignore[attr-defined]
    assert text.count(answer("job")) == 1, text
    log = _tool_log(tools)
    assert [(e, n) for e, _, n in log if n == "fetch"] == [("start", "fetch"), ("start", "fetch"), ("end", "fetch")]
    assert [(e, n) for e, _, n in log if n == "record"] == [("start", "record")]  # reported, never run again
