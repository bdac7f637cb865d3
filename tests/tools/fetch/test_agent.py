"""Fetch tools through a Think agent: a scripted turn calls `fetch_url`, the result lands in the
transcript, the model sees it and the capability line; a binary body spills to the agent's workspace."""

from __future__ import annotations

from pathlib import Path

from tests.net.site import PNG, Site
from think import Think, open_agent
from think.models.base import ToolMessage
from think.testing.models import ScriptedModel, call
from think.tools.fetch import create_fetch_tools


async def test_a_turn_fetches_and_the_transcript_keeps_the_result(site: Site, data_dir: Path) -> None:
    model = ScriptedModel([[call("fetch_url", url=site.url("/page.html")),
                            call("fetch_url", url=site.url("/image.png"))], "High water is at 06:12."])

    class Reader(Think):
        workspace_bash = False
        fetch_tools = create_fetch_tools([f"{site.origin}/**"], allow_private_networks=["127.0.0.1/32"],
                                         spill_to_workspace=True)

        def get_model(self) -> ScriptedModel:
            return model

    async with open_agent(Reader, "r", data_dir=data_dir) as agent:
        result = await agent.save_messages(["When is high water in Brest?"])
        assert result.status == "completed"
        assert "fetch_url" in agent.server_tools()
        reply = agent.messages[-1].to_json()
        page, image = [p for p in reply["parts"] if p["type"] == "tool-fetch_url"]
        assert page["state"] == "output-available" and page["output"]["ok"] is True
        assert page["output"]["body"].startswith("<untrusted_web_content") and "# Tide tables" in page["output"]["body"]
        assert image["output"]["response"] == "workspace"
        assert await agent.workspace.read_bytes(image["output"]["path"]) == PNG
        assert reply["parts"][-1]["text"] == "High water is at 06:12."

    first, second = model.requests
    assert "- Fetching allowlisted web addresses" in first.system
    assert "fetch_url" in [spec.name for spec in first.tools]
    assert isinstance(second.messages[-1], ToolMessage) and "Tide tables" in str(second.messages[-1])
    assert site.paths() == ["/page.html", "/image.png"]


async def test_without_fetch_tools_there_is_no_fetch_capability(data_dir: Path) -> None:
    model = ScriptedModel(["Hello."])

    class Plain(Think):
        workspace_bash = False

        def get_model(self) -> ScriptedModel:
            return model

    async with open_agent(Plain, "p", data_dir=data_dir) as agent:
        await agent.save_messages(["hi"])
    assert "Fetching" not in model.requests[0].system
    assert not [spec for spec in model.requests[0].tools if spec.name.startswith("fetch_")]
