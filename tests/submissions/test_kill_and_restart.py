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
