"""The coding-assistant example: a file written with `write`, run by sandboxed `bash`, checked by `execute`."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from think import open_agent
from think.messages import ToolPart
from think.workspace.tools import WORKSPACE_TOOL_NAMES

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coding_assistant.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_coding_assistant", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_assistant_has_the_workspace_tools_bash_with_its_limit_and_execute(data_dir: Path) -> None:
    module = load()
    async with open_agent(module.CodingAssistant, "tools", data_dir=data_dir) as agent:
        tools = agent.all_tools()
        assert set(tools) == {*WORKSPACE_TOOL_NAMES, "bash", "execute"}
        assert "a 60 s time limit" in tools["bash"].description


@pytest.mark.usefixtures("bubblewrap")
async def test_it_writes_runs_and_checks_a_program(data_dir: Path) -> None:
    module = load()
    async with open_agent(module.OfflineCodingAssistant, "demo", data_dir=data_dir) as agent:
        result = await agent.save_messages("Write fizzbuzz in Python, run it up to 15 and check the output.")
        assert result.status == "completed"
        parts = {p.name: p for m in agent.messages for p in m.parts if isinstance(p, ToolPart)}
        assert parts["write"].output["bytesWritten"] == len(module.FIZZBUZZ)
        bash = parts["bash"].output
        assert (bash["exitCode"], bash["stdout"], bash["stderr"]) == (0, "13\n14\nFizzBuzz\n", "")
        assert bash["changedFiles"]["created"] == ["/out/fizzbuzz.txt"]
        written = await agent.workspace.read_file("/out/fizzbuzz.txt")
        assert written is not None and written.splitlines()[:5] == ["1", "2", "Fizz", "4", "Buzz"]
        checked = parts["execute"].output
        assert (checked["status"], checked["value"]) == ("completed", {"lines": 15, "fizzbuzz_at": [15]})
        assert agent.messages[-1].text.startswith("fizzbuzz.py prints 15 lines")
