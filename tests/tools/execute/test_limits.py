"""The escape and limit battery through a real turn: each program is contained, the model reads
the error, and the agent keeps working (the last program of the turn runs normally)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from tests.sandbox.conftest import Canary, canary  # noqa: F401  (the fixture)
from tests.tools.execute.agents import get_weather
from tests.tools.execute.test_execute import execute_parts
from think import Think, open_agent
from think.testing.models import ScriptedModel, call
from think.tools.execute import create_execute_tool

BATTERY = [
    ("open('/etc/passwd').read()", "PermissionError"),
    ("open('/tmp/think-pwned', 'w').write('x')", "PermissionError"),
    ("import socket", "ModuleNotFoundError: No module named 'socket'"),
    ("import os\nos.listdir('/')", "PermissionError"),
    ("import subprocess", "ModuleNotFoundError"),
    ("import ctypes", "ModuleNotFoundError"),
    ("while True:\n    pass", "TimeoutError: the code ran longer than 2 s"),
    ("'a' * (2 * 1024 ** 3)", "MemoryError"),
    ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
    ("for i in range(10000):\n    tools.get_weather(city='x')", "host-call limit reached: at most 50 calls"),
]


class Boxed(Think):
    model: ClassVar[ScriptedModel] = ScriptedModel([])
    workspace_bash = False
    max_steps = 20
    timeout: ClassVar[float] = 2

    def get_model(self) -> ScriptedModel:
        return type(self).model

    def get_tools(self) -> list[Any]:
        return [get_weather, create_execute_tool(self, timeout=self.timeout, max_host_calls=50, max_output=2000)]


class RoomyBox(Boxed):
    timeout: ClassVar[float] = 30  # the grep budget (0.5 s) must be what stops it, however loaded the machine


def escaped() -> bool:
    """A file the battery tries to write on the host."""
    return Path("/tmp/think-pwned").exists()


async def test_every_escape_and_limit_is_a_result_and_the_agent_keeps_working(data_dir: Path, canary: Canary) -> None:  # noqa: F811
    fine = "print('x' * 10000)\n[tools.get_weather(city='Oslo')['temp'], 'y' * 5000]"
    Boxed.model = ScriptedModel([*(call("execute", code=code) for code, _ in BATTERY), call("execute", code=fine),
                                 "All contained."])
    async with open_agent(Boxed, "b", data_dir=data_dir) as agent:
        result = await agent.save_messages(["Try to escape"])
        assert result.status == "completed"
        outputs = [p.output for p in execute_parts(agent.messages)]
        assert len(outputs) == len(BATTERY) + 1
        for (code, error), out in zip(BATTERY, outputs, strict=False):
            assert out["ok"] is False and error in out["error"], (code, out)
        last = outputs[-1]
        assert last["ok"] is True and last["value"].startswith('[12, "yyy')
        assert "more characters of output dropped" in last["stdout"] and "(truncated: the value is" in last["value"]
        assert agent.messages[-1].parts[-1].text == "All contained."  # type: ignore[union-attr]
        # what the model got back for the timeout is in its next request
        assert "TimeoutError" in str(Boxed.model.requests[7].messages)
    assert not escaped() and canary.hits == []


async def test_a_catastrophic_grep_pattern_is_stopped_by_its_budget_and_the_next_call_works(data_dir: Path) -> None:
    RoomyBox.model = ScriptedModel([
        call("execute", code="state.write_file('/x.txt', 'x' * 5000)\nstate.grep(r'(x+x+)+y')"),
        call("execute", code="state.grep('x{3}')['total_matches']"), "Contained."])
    async with open_agent(RoomyBox, "g", data_dir=data_dir) as agent:
        result = await agent.save_messages(["Search"])
        assert result.status == "completed"
        slow, after = (p.output for p in execute_parts(agent.messages))
        assert slow["ok"] is False and "TimeoutError: the pattern took longer than 0.5 s" in slow["error"], slow
        assert after["ok"] is True and after["value"] == 1
