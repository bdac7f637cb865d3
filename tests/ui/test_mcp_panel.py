"""The MCP panel of the shipped page, in headless Chromium against a real server: the agent's
servers with their state and tool count, from `cf_agent_mcp_servers` (the demo MCP server over
stdio, ready; a server at a port nobody listens on, failed with its error)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.mcp.conftest import STDIO_ARGS, STDIO_COMMAND, env, free_port
from tests.ui.conftest import SCREENSHOTS, Browser
from think import Think
from think.testing import ScriptedModel

ADDRESS = "mcp-assistant"


class McpAssistant(Think):
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(["Hello."])

    async def on_start(self) -> None:
        if not self.mcp_servers():
            await self.add_mcp_server("demo", command=STDIO_COMMAND, args=STDIO_ARGS, env=env(), timeout=0)
            await self.add_mcp_server("gone", f"http://127.0.0.1:{free_port()}/mcp", timeout=0)


def test_the_panel_shows_each_server_its_state_and_tools(browser: Browser, serve: Callable[..., Any]) -> None:
    server = ".mcp-server[data-state='{}']".format
    with serve([McpAssistant]) as url:
        run = browser.run(url, [
            {"action": "goto", "path": f"/#/{ADDRESS}/one"},
            {"action": "waitFor", "selector": "button[aria-label='MCP servers']"},
            {"action": "click", "selector": "button[aria-label='MCP servers']"},
            {"action": "waitFor", "selector": server("ready")},
            {"action": "waitFor", "selector": server("failed")},
            {"action": "text", "selector": f"{server('ready')} .mcp-name", "as": "ready_name"},
            {"action": "text", "selector": f"{server('ready')} .mcp-tools", "as": "tools"},
            {"action": "text", "selector": f"{server('failed')} .mcp-name", "as": "failed_name"},
            {"action": "text", "selector": f"{server('failed')} .mcp-error", "as": "error"},
            {"action": "text", "selector": "button[aria-label='MCP servers']", "as": "chip"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "mcp.png")},
        ])
    values = run.values
    assert values["ready_name"] == ["demo"] and values["tools"] == ["8 tools"]
    assert values["failed_name"] == ["gone"] and values["error"][0]
    assert values["chip"] == ["MCP 1/2"]
    frames = [f for f in run.received if f.get("type") == "cf_agent_mcp_servers"]
    assert frames and frames[0]["mcp"]["servers"]  # the stored servers are there from the first frame
    assert not [line for line in run.console if line.startswith(("pageerror", "error"))]
