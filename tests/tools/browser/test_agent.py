"""Browser tools through a Think agent: a scripted turn opens a page and takes a screenshot; the
results land in the transcript, the PNG in the agent's workspace, and the model sees the
capability line."""

from __future__ import annotations

from pathlib import Path

from tests.net.site import PNG
from tests.tools.browser.helpers import attached
from tests.tools.browser.site import BrowserSite
from think import Think, open_agent
from think.testing.models import ScriptedModel, call
from think.tools.browser.process import Chromium


async def test_a_turn_browses_and_screenshots(chromium: Chromium, site: BrowserSite, data_dir: Path) -> None:
    model = ScriptedModel([[call("browser_markdown", url=site.url("/app.html")),
                            call("browser_screenshot", url=site.url("/table.html"))], "Berth 7 is free."])

    class Surfer(Think):
        workspace_bash = False
        browser_tools = attached(chromium)

        def get_model(self) -> ScriptedModel:
            return model

    async with open_agent(Surfer, "s", data_dir=data_dir) as agent:
        result = await agent.save_messages(["Is a berth free?"])
        assert result.status == "completed"
        assert {"browser_markdown", "browser_execute", "browser_search"} <= set(agent.server_tools())
        reply = agent.messages[-1].to_json()
        page, shot = [p for p in reply["parts"] if p["type"].startswith("tool-browser_")]
        assert page["output"]["ok"] is True and "Berth **7** is free." in page["output"]["markdown"]
        assert shot["output"]["ok"] is True
        image = await agent.workspace.read_bytes(shot["output"]["path"])
        assert image is not None and image[:8] == PNG[:8]
    assert "- A real web browser limited to allowlisted addresses" in model.requests[0].system
