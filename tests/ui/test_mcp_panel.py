"""The MCP panel of the shipped page, in headless Chromium against a real server: the agent's
servers with their state and tool count, from `cf_agent_mcp_servers` (the demo MCP server over
stdio, ready; a server at a port nobody listens on, failed with its error), and the sign-in link
of an OAuth-protected server, which the page follows to connect it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.mcp.conftest import (
    STDIO_ARGS,
    STDIO_COMMAND,
    OAuthServer,
    env,
    free_port,
    oauth_server,  # noqa: F401  (the fixture)
)
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


class SignInAssistant(Think):
    workspace_bash = False
    protected_url = ""
    callback_host = ""

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(["Hello."])

    async def on_start(self) -> None:
        if not self.mcp_servers():
            await self.add_mcp_server("vault", self.protected_url, callback_host=self.callback_host, timeout=0)


def test_an_authenticating_server_shows_its_sign_in_link(browser: Browser, serve: Callable[..., Any],
                                                          oauth_server: OAuthServer) -> None:  # noqa: F811
    server = ".mcp-server[data-state='{}']".format
    SignInAssistant.protected_url = oauth_server.url
    with serve([SignInAssistant]) as url:
        SignInAssistant.callback_host = url.rstrip("/")
        run = browser.run(url, [
            {"action": "goto", "path": "/#/sign-in-assistant/one"},
            {"action": "click", "selector": "button[aria-label='MCP servers']"},
            {"action": "waitFor", "selector": f"{server('authenticating')} a.mcp-auth"},
            {"action": "attr", "selector": "a.mcp-auth", "name": "href", "as": "href"},
            {"action": "text", "selector": "a.mcp-auth", "as": "link"},
            # the user follows the link (a new tab): the authorization server approves at once and
            # sends that tab back to the agent's callback; the panel turns ready
            {"action": "click", "selector": "a.mcp-auth"},
            {"action": "waitFor", "selector": server("ready")},
            {"action": "text", "selector": f"{server('ready')} .mcp-tools", "as": "tools"},
            {"action": "count", "selector": "a.mcp-auth", "as": "links_after"},
        ])
    values = run.values
    assert str(values["href"]).startswith(f"{oauth_server.base}/authorize?"), values
    assert values["link"] == ["Sign in"]
    assert values["tools"] == ["1 tool"] and values["links_after"] == 0
    assert oauth_server.stats()["code_exchanges"] == 1
