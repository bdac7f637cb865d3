"""The web reader example: its agent's tools are fetch tools only, and the offline run reads a page."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from think import open_agent
from think.messages import ToolPart
from think.tools import ToolContext

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "web_reader.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_web_reader", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_offline_reader_fetches_a_page(data_dir: Path) -> None:
    module = load()
    with module.local_docs() as origin:
        async with open_agent(module.offline_reader(origin), "demo", data_dir=data_dir) as agent:
            await agent.save_messages(["How do I pretty-print JSON?"])
            [part] = [p for m in agent.messages for p in m.parts if isinstance(p, ToolPart)]
    assert part.output["ok"] is True and part.output["content_type"] == "text/html"
    assert "# json — JSON encoder and decoder" in part.output["body"] and "track()" not in part.output["body"]


async def test_the_served_reader_may_not_reach_local_addresses(data_dir: Path) -> None:
    module = load()
    with module.local_docs() as origin:
        async with open_agent(module.DocsReader, "d", data_dir=data_dir) as agent:
            fetch_url = agent.all_tools()["fetch_url"]
            assert fetch_url.execute is not None
            refused = await fetch_url.execute({"url": f"{origin}/3/"}, ToolContext(tool_call_id="c", tool_name="x"))
    assert refused["code"] == "disallowed_url"
