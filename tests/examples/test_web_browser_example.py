"""The web browser example: the offline run reads a script-rendered page; the served agent may
not reach local addresses and declares the sweep task."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from tests.tools.browser.conftest import chromium_binary
from think import open_agent
from think.messages import ToolPart
from think.tools import ToolContext

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "web_browser.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_web_browser", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_offline_reader_reads_a_rendered_page(data_dir: Path) -> None:
    chromium_binary()
    module = load()
    with module.local_docs() as origin:
        reader = module.offline_reader(origin)
        try:
            async with open_agent(reader, "demo", data_dir=data_dir) as agent:
                await agent.save_messages(["How do I pretty-print JSON?"])
                [part] = [p for m in agent.messages for p in m.parts if isinstance(p, ToolPart)]
                refused = await agent.all_tools()["browser_markdown"].execute(  # type: ignore[misc]
                    {"url": "http://localhost:1/"}, ToolContext(tool_call_id="c", tool_name="browser_markdown"))
                assert set(agent.get_scheduled_tasks()) == {"sweep-browser"}
                await agent.sweep_browser(None)
        finally:
            await reader.browser_tools.close()
    assert part.output["ok"] is True and "Use json.dumps(obj, indent=2) to pretty-print." in part.output["markdown"]
    assert refused["code"] == "disallowed_url"


def test_the_served_reader_is_limited_to_the_python_docs() -> None:
    module = load()
    policy = module.PageReader.browser_tools.browser.policy
    assert policy.check("https://docs.python.org/3/library/json.html")
    assert not policy.check("https://example.org/")
    assert not policy.check("http://127.0.0.1/")
