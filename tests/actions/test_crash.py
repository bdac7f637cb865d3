"""A real child process is SIGKILLed during or after an action's `execute`; after the restart the
side effect (counted in a file) has happened at most once, unless a lease let an explicit key run again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.actions.agents import Shop, effects
from tests.actions.crash_child import CrashShop
from tests.actions.test_ledger import outputs
from think import open_agent
from think.testing.models import ScriptedModel


def run_child(data_dir: Path, effects_file: Path, mode: str, crash: str = "during") -> None:
    Path(f"{effects_file}.armed").touch()
    env = {**os.environ, "THINK_ACTION_EFFECTS": str(effects_file), "THINK_CRASH": crash}
    done = subprocess.run([sys.executable, "-m", "tests.actions.crash_child", str(data_dir), mode],
                          env=env, capture_output=True, timeout=120, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-3000:]
    Path(f"{effects_file}.armed").unlink(missing_ok=True)  # this process must not die of it


async def test_killed_inside_execute_without_a_key_it_is_not_run_again(data_dir: Path, effects_file: Path) -> None:
    run_child(data_dir, effects_file, "during-note")
    assert effects() == ["note:hello"]
    CrashShop.model = ScriptedModel(["Recovered."])
    async with open_agent(CrashShop, "c", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=30)
        [out] = outputs(agent.messages, "note")
        assert out["error"]["name"] == "ActionPendingError"  # the model is told; nothing ran blindly
        assert effects() == ["note:hello"]


async def test_killed_inside_execute_with_a_key_waits_for_the_lease(data_dir: Path, effects_file: Path) -> None:
    run_child(data_dir, effects_file, "during-charge")
    assert effects() == ["charge:inv-9:7"]
    CrashShop.model = ScriptedModel(["Recovered."])
    async with open_agent(CrashShop, "c", data_dir=data_dir) as agent:  # within the lease
        assert await agent.wait_until_stable(timeout=30)
        [out] = outputs(agent.messages, "charge")
        assert out["error"]["name"] == "ActionPendingError"
        assert effects() == ["charge:inv-9:7"]


async def test_a_stale_pending_row_with_a_key_is_reclaimed_after_the_lease(data_dir: Path, effects_file: Path) -> None:
    run_child(data_dir, effects_file, "during-charge")
    Shop.clock_offset = CrashShop.action_ledger_pending_retry_lease + 1  # type: ignore[operator]
    CrashShop.model = ScriptedModel(["Charged after the restart."])
    async with open_agent(CrashShop, "c", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=30)
        [out] = outputs(agent.messages, "charge")
        assert out == {"charged": 7, "invoice": "inv-9"}  # the key's owner said a re-run is safe
        assert effects() == ["charge:inv-9:7", "charge:inv-9:7"]
        row = agent.action_runtime.ledger.row("action:charge:invoice:inv-9")
        assert row is not None and row["status"] == "settled"


async def test_killed_after_execute_the_recovered_turn_replays_the_result(data_dir: Path, effects_file: Path) -> None:
    run_child(data_dir, effects_file, "after", crash="after")
    assert effects() == ["charge:inv-9:7"]
    CrashShop.model = ScriptedModel(["Recovered."])
    async with open_agent(CrashShop, "c", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=30)
        [out] = outputs(agent.messages, "charge")
        assert out == {"charged": 7, "invoice": "inv-9"}  # from the ledger
        assert effects() == ["charge:inv-9:7"]
        assert agent.messages[-1].parts[-1].text == "Recovered."  # type: ignore[union-attr]


async def test_a_parked_action_survives_a_kill_and_is_approved_after_the_restart(data_dir: Path,
                                                                                 effects_file: Path) -> None:
    run_child(data_dir, effects_file, "park")
    assert effects() == []
    CrashShop.model = ScriptedModel(["Sent after the restart."])
    async with open_agent(CrashShop, "c", data_dir=data_dir) as agent:
        [pending] = agent.pending_approvals()
        assert pending["source"] == "action" and pending["descriptor"]["action"] == "send_email"
        result = await agent.approve_execution(pending["execution_id"])
        assert result["status"] == "completed" and result["output"] == {"sent": True, "to": "ada@example.com"}
        assert effects() == ["email:ada@example.com"]
        assert outputs(agent.messages, "send_email") == [result["output"]]
        assert agent.messages[-1].parts[-1].text == "Sent after the restart."  # type: ignore[union-attr]
        again = await agent.approve_execution(pending["execution_id"])
        assert again["status"] == "error" and "already settled" in again["error"]
        assert effects() == ["email:ada@example.com"]


async def test_an_approved_action_killed_inside_execute_is_not_run_again(data_dir: Path, effects_file: Path) -> None:
    run_child(data_dir, effects_file, "approve")
    assert effects() == ["email:ada@example.com"]
    CrashShop.model = ScriptedModel(["After the restart."])
    async with open_agent(CrashShop, "c", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=30)
        await _settled(agent)
        [out] = outputs(agent.messages, "send_email")
        assert out["error"]["name"] == "ActionPendingError"
        assert effects() == ["email:ada@example.com"]
        assert agent.pending_approvals() == []


async def _settled(agent: Shop) -> None:
    import anyio

    with anyio.fail_after(30):
        while agent.sql("SELECT count(*) AS n FROM think_action_approvals WHERE applied = 0")[0]["n"]:  # noqa: ASYNC110
            await anyio.sleep(0.02)  # the start finishes it in the background
    assert await agent.wait_until_stable(timeout=30)
