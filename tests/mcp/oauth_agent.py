"""The agent `think serve` runs in the OAuth tests (`tests.mcp.oauth_agent:Secretive`).

Its `@callable`s are what a UI would call: add a server (the OAuth callback URL is this agent's
URL as the WebSocket reached it), ask a question (a scripted turn calling a tool), and read
whether tokens are stored.
"""

from __future__ import annotations

from typing import Any

from tests.mcp.test_client_tools import Mcp
from think import callable


class Secretive(Mcp):
    wait_for_mcp_connections = True

    @callable()
    async def add_server(self, url: str) -> Any:
        return await self.add_mcp_server("vault", url)

    @callable()
    async def ask(self, text: str) -> Any:
        result = await self.chat(text)
        part = self.messages[-1].tool_parts[0]
        return {"status": result.status, "state": part.state, "output": part.output, "error": part.error_text}

    @callable()
    def servers(self) -> Any:
        return self.mcp_servers()

    @callable()
    def has_tokens(self) -> bool:
        return any(self.mcp.oauth.store.has_tokens(s["id"]) for s in self.mcp_servers())
