"""The code-mode example: its program runs over the example's tools and writes the report."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from think import open_agent
from think.messages import ToolPart

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "code_mode.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_code_mode", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_example_program_totals_the_orders(data_dir: Path) -> None:
    module = load()
    async with open_agent(module.OfflineAnalyst, "demo", data_dir=data_dir) as agent:
        await agent.save_messages(["How much did each customer spend?"])
        [part] = [p for m in agent.messages for p in m.parts if isinstance(p, ToolPart)]
        assert part.output["value"] == {"ada": 132.25, "bob": 35.5}
        assert '"ada": 132.25' in (await agent.workspace.read_file("/reports/totals.json") or "")
        assert agent.messages[-1].parts[-1].text == "Ada spent 132.25, Bob 35.50."  # type: ignore[union-attr]
