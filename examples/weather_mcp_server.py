"""A tiny MCP server (the official SDK's `MCPServer`) for `examples/mcp_tools.py`.

    python examples/weather_mcp_server.py          # speaks MCP over stdin/stdout
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("weather", instructions="Forecasts for cities.")


@server.tool()
def forecast(city: str) -> str:
    """Tomorrow's forecast for a city."""
    return f"{city}: sunny, 24 °C"


if __name__ == "__main__":
    server.run("stdio")
