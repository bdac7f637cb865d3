"""A real child process is SIGKILLed during an execution, or while one is paused; after the
restart nothing that completed runs again, and a paused execution can still be approved."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio

from tests.tools.execute.agents import CrashCoder
from tests.tools.execute.test_execute import execute_parts
from think import open_agent
from think.sandbox.host import INTERRUPTED
from think.testing.models import ScriptedModel


def run_child(data_dir: Path, counter: Path, mode: str) -> None:
    """Run the child to its SIGKILL (the crash mode's `die` tool kills it while `.armed` exists)."""
    if mode in ("crash", "approve"):
        Path(f"{counter}.armed").touch()
    env = {**os.environ, "THINK_TEST_COUNTER": str(counter)}
    done = subprocess.run([sys.executable, "-m", "tests.tools.execute.crash_child", str(data_dir), mode],
                          env=env, capture_output=True, timeout=120, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-3000:]


def lines(counter: Path) -> list[str]:
    return counter.read_text().split()


async def test_a_crash_after_three_host_calls_does_not_repeat_them(data_dir: Path, tmp_path: Path) -> None:
    counter = tmp_path / "effects.txt"
    run_child(data_dir, counter, "crash")
    assert lines(counter) == ["bump:0", "bump:1", "bump:2", "die"]  # killed inside the fourth call

    os.environ["THINK_TEST_COUNTER"] = str(counter)
    try:
        CrashCoder.model = ScriptedModel(["Recovered."])
        async with open_agent(CrashCoder, "c", data_dir=data_dir) as agent:
            assert await agent.wait_until_stable(timeout=30)
            [part] = execute_parts(agent.messages)
            out = part.output
            assert out["ok"] is True, out
            assert out["value"] == {"total": 30, "note": INTERRUPTED}
            # the three completed calls came from the journal; the cut-off one was not made again
            assert lines(counter) == ["bump:0", "bump:1", "bump:2", "die"]
            [run] = agent.executions(limit=5)
            assert [e["method"] for e in run["journal"]] == ["bump", "bump", "bump", "die"]
            assert run["journal"][3]["error"] == f"RuntimeError: {INTERRUPTED}"
            assert agent.messages[-1].parts[-1].text == "Recovered."  # type: ignore[union-attr]
    finally:
        del os.environ["THINK_TEST_COUNTER"]


async def test_a_paused_execution_survives_a_sigkill_and_is_approved_after_the_restart(data_dir: Path,
                                                                                       tmp_path: Path) -> None:
    counter = tmp_path / "effects.txt"
    run_child(data_dir, counter, "pause")
    assert lines(counter) == ["bump:1"]

    os.environ["THINK_TEST_COUNTER"] = str(counter)
    try:
        CrashCoder.model = ScriptedModel(["Mail sent after the restart."])
        async with open_agent(CrashCoder, "c", data_dir=data_dir) as agent:
            [pending] = agent.pending_executions()  # the runtime is built from get_tools() on demand
            assert pending["pending"]["tool"] == "tools.send_email"
            result = await agent.approve_execution(pending["execution_id"])
            assert result["status"] == "completed", result
            assert result["value"] == {"bumped": 10, "mail": "sent to ada@example.com"}
            assert lines(counter) == ["bump:1", "email:ada@example.com"]
            [part] = execute_parts(agent.messages)
            assert part.output == result
            assert agent.messages[-1].parts[-1].text == "Mail sent after the restart."  # type: ignore[union-attr]
            assert (await agent.approve_execution(pending["execution_id"]))["status"] == "error"
            assert lines(counter) == ["bump:1", "email:ada@example.com"]
    finally:
        del os.environ["THINK_TEST_COUNTER"]


async def test_an_approved_execution_killed_while_it_continues_is_finished_after_the_restart(
        data_dir: Path, tmp_path: Path) -> None:
    counter = tmp_path / "effects.txt"
    run_child(data_dir, counter, "approve")
    assert lines(counter) == ["bump:1", "email:ada@example.com", "bump:2", "die"]

    os.environ["THINK_TEST_COUNTER"] = str(counter)
    try:
        CrashCoder.model = ScriptedModel(["Done after the restart."])
        async with open_agent(CrashCoder, "c", data_dir=data_dir) as agent:
            async def finished() -> bool:
                return agent.executions(limit=1)[0]["status"] == "completed"

            with anyio.fail_after(30):
                while not await finished():  # noqa: ASYNC110  (a condition in the database)
                    await anyio.sleep(0.02)  # the start continues it in the background
            assert await agent.wait_until_stable(timeout=30)
            [run] = agent.executions(limit=1)
            assert run["value"] == {"bumped": 30, "mail": "sent to ada@example.com", "note": INTERRUPTED}
            # nothing that had completed ran again: one mail, each bump once, `die` not repeated
            assert lines(counter) == ["bump:1", "email:ada@example.com", "bump:2", "die"]
            [part] = execute_parts(agent.messages)
            assert part.output["value"] == run["value"]
            assert agent.messages[-1].parts[-1].text == "Done after the restart."  # type: ignore[union-attr]
            assert agent.pending_executions() == []
    finally:
        del os.environ["THINK_TEST_COUNTER"]
