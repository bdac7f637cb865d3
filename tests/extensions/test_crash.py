"""A real child process is SIGKILLed in the middle of a model-driven load. The row is the one
write that makes a load durable: killed before it, nothing is loaded after the restart; killed
after it, the extension is restored. Either way the interrupted `load_extension` call is settled
as interrupted and the turn is recovered."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.extensions.agents import Assistant, call_tool
from think import open_agent
from think.testing.models import ScriptedModel


def run_child(data_dir: Path, mode: str) -> None:
    done = subprocess.run([sys.executable, "-m", "tests.extensions.crash_child", str(data_dir), mode],
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-3000:]


@pytest.mark.parametrize("mode", ["before", "after"])
async def test_a_kill_during_a_load(data_dir: Path, mode: str) -> None:
    run_child(data_dir, mode)
    Assistant.model = ScriptedModel(["Recovered."] * 3)
    async with open_agent(Assistant, "k", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=30)
        [part] = [p for m in agent.messages for p in m.tool_parts if p.name == "load_extension"]
        assert part.state == "output-error", part  # the call was cut off: the model is told so
        names = [e["name"] for e in agent.extensions.list()]
        stored = agent.db.value("SELECT count(*) FROM think_extensions")
        if mode == "before":
            assert names == [] and stored == 0 and agent.extensions.get_tools() == {}
        else:
            assert names == ["notes"] and stored == 1
            result = await call_tool(agent, "notes_save", title="t", text="x")
            assert result.output == {"saved": "t"}
