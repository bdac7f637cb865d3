"""An agent that uses an MCP server's tools, and a page (or any client) that adds servers.

    think serve examples/mcp_tools.py:Researcher          # chat; the weather server is added
    python examples/mcp_tools.py                          # offline: a scripted model calls it

`weather_mcp_server.py` next to this file is a real MCP server (the official SDK's `MCPServer`);
the agent starts it as a subprocess over stdio the first time it runs, and remembers it: after a restart the
server list comes back from the agent's database and reconnects in the background. Its tool
`forecast` reaches the model as `weather_forecast`.

`add_server` / `remove_server` are `@callable`, so a page can manage remote servers with
`agent.call("add_server", ["docs", "https://…/mcp"])` and watch their state in `onMcpUpdate`.
Only expose them to people you would let choose what your agent connects to; set
`mcp_url_policy` to limit which URLs they may add.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any, ClassVar

from think import Think, callable, open_agent
from think.testing.models import ScriptedModel, call

WEATHER_SERVER = Path(__file__).with_name("weather_mcp_server.py")


class Researcher(Think):
    """Answers with the help of its MCP servers."""

    wait_for_mcp_connections: ClassVar[dict[str, float]] = {"timeout": 5}
    welcome = "I use the tools of my MCP servers; a local weather server is connected."
    suggestions = ("What is the weather in Lisbon tomorrow?", "Which MCP servers do you have?")

    async def on_start(self) -> None:
        if not self.mcp_servers():  # the first start: remember the local weather server
            await self.add_mcp_server("weather", command=sys.executable, args=[str(WEATHER_SERVER)],
                                      timeout=0)

    @callable(description="Add a remote MCP server (streamable HTTP or SSE).")
    async def add_server(self, name: str, url: str) -> dict[str, Any]:
        return await self.add_mcp_server(name, url)

    @callable(description="Remove an MCP server by id.")
    async def remove_server(self, server_id: str) -> bool:
        return await self.remove_mcp_server(server_id)


class OfflineResearcher(Researcher):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel([call("weather_forecast", city="Lisbon"), "It will be sunny in Lisbon."])


async def main() -> None:
    async with open_agent(OfflineResearcher, "demo", data_dir=".think-example") as agent:
        await agent.save_messages(["What is the weather in Lisbon tomorrow?"])
        for message in agent.messages:
            for part in message.parts:
                print(message.role, getattr(part, "text", None) or getattr(part, "output", None))


if __name__ == "__main__":
    asyncio.run(main())
