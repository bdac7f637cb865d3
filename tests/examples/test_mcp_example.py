"""The MCP example: the agent starts its stdio weather server and the model's call reaches it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from think import open_agent
from think.messages import ToolPart

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_tools.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_mcp_tools", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_example_agent_calls_the_weather_server(data_dir: Path) -> None:
    module = load()
    async with open_agent(module.OfflineResearcher, "demo", data_dir=data_dir) as agent:
        await agent.save_messages(["What is the weather in Lisbon tomorrow?"])
        [part] = [p for m in agent.messages for p in m.parts if isinstance(p, ToolPart)]
        assert (part.name, part.output) == ("weather_forecast", "Lisbon: sunny, 24 °C")
        assert agent.messages[-1].parts[-1].text == "It will be sunny in Lisbon."  # type: ignore[union-attr]
        assert [s["name"] for s in agent.mcp_servers()] == ["weather"]
