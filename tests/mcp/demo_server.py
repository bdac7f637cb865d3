"""A real MCP server built with the SDK, for the MCP tests (run as a subprocess).

    python -m tests.mcp.demo_server stdio
    python -m tests.mcp.demo_server http PORT      # streamable HTTP at /mcp, SSE at /sse

Tools: `echo` (text), `pixel` (an image), `weather` (structured content), `fail` (an error
result), `slow` (sleeps), `grow` (adds the tool `late` and announces the tool-list change),
`crash` (the process exits in the middle of the call), `huge` (a big text). A prompt `greet`
and a resource `demo://readme`.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import Context, Image, MCPServer
from pydantic import BaseModel

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")

server = MCPServer("demo", instructions="A demo server for think's tests.")


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def pixel() -> Image:
    """A one-pixel PNG."""
    return Image(data=PNG, format="png")


@server.tool()
def weather(city: str) -> Weather:
    """The weather in a city (structured)."""
    return Weather(city=city, celsius=21.5)


@server.tool()
def fail(reason: str = "no reason") -> str:
    """Always fails."""
    raise ValueError(f"failed on purpose: {reason}")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


def late() -> str:
    """A tool that exists only after `grow`."""
    return "late tool here"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `late` and announce the change."""
    server.add_tool(late)
    await ctx.notify_tools_changed()
    return "grown"


@server.tool()
def crash() -> str:
    """The server process dies in the middle of this call."""
    os._exit(3)


@server.tool()
def huge(size: int) -> str:
    """A text of `size` characters."""
    return "x" * size


@server.prompt()
def greet(name: str) -> str:
    """A greeting prompt."""
    return f"Say hello to {name}."


@server.resource("demo://readme")
def readme() -> str:
    """The demo readme."""
    return "This is the demo server."


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        server.run("stdio")
        return
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    port = int(sys.argv[2])
    http = server.streamable_http_app()
    sse = server.sse_app()
    app = Starlette(routes=[Mount("/legacy", app=sse), Mount("/", app=http)], lifespan=http.router.lifespan_context)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
