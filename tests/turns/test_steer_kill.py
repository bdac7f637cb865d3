"""SIGKILL a server while a steered message waits for the running turn's step boundary: the
message was stored before `submit_messages` returned, so the restarted agent answers it once,
after the interrupted turn's recovered answer."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.submissions.server_process import eventually, serve_process
from think.client import AgentClient

APP = "tests.turns.steer_app:app"
READY = "/agents/steer-kill/probe/get-messages"


def calls(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_a_kill_mid_steer_keeps_the_steered_message_and_answers_it_after_a_restart(tmp_path: Path) -> None:
    log = tmp_path / "calls.txt"
    env = {"THINK_DATA_DIR": str(tmp_path / "data"), "THINK_TEST_CALLS": str(log)}
    with serve_process(APP, env, ready_path=READY) as server:
        async with AgentClient.connect(f"{server.ws}/agents/steer-kill/room", call_timeout=10) as client:
            await client.call("submit", "plan the move")
            await eventually(lambda: "tool" in calls(log))  # the first model call's tool runs
            steered = await client.call("submit", "also pack the books", "steer")
            assert steered["accepted"] and steered["status"] == "pending"  # acknowledged: stored
            assert await client.call("is_steering")  # waiting for the boundary, which never comes
        server.kill()
    assert "model: also pack the books" not in calls(log)

    with serve_process(APP, env, ready_path=READY) as server:
        async with AgentClient.connect(f"{server.ws}/agents/steer-kill/room", call_timeout=10) as client:
            with anyio.fail_after(30):  # polling: the restarted process recovers on its own
                while (await client.call("inspect", steered["submissionId"]))["status"] != "completed":  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            transcript = await client.call("transcript")
    assert calls(log).count("model: also pack the books") == 1
    # The interrupted turn is recovered first (its cut-off tool call reported, its answer continued
    # in the same message), then the steered message is answered: stored once, in order.
    assert transcript == ["user: plan the move", "assistant: Plan finished.",
                          "user: also pack the books", "assistant: Noted: also pack the books"]
