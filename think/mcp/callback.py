"""The OAuth callback of an agent's MCP servers: `GET <agent URL>/callback?code=…&state=…`.

The server app answers it for a chat agent (as the original answers `…/<agent>/<name>/callback`):
the flow the `state` names gets the code (`think.mcp.oauth`), and the browser gets a small page
saying whether the server is connected now. The redirect URI a server is registered with is
that route under the URL the agent was reached at when `add_mcp_server` ran (`AGENT_URL`, set by
the server app for WebSocket connections and HTTP requests), or under `callback_host`.

No SDK import here: the server app loads this module for every callback.
"""

from __future__ import annotations

import html
from contextvars import ContextVar
from typing import TYPE_CHECKING

from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, Response

if TYPE_CHECKING:
    from think.mcp.clients import MCPClients

CALLBACK_PATH = "callback"
"""The path under the agent's URL that the authorization server sends the user back to."""

AGENT_URL: ContextVar[str | None] = ContextVar("think_mcp_agent_url", default=None)
"""The public URL of the agent the current request or WebSocket connection addresses."""


def agent_url(conn: HTTPConnection, rest: str = "") -> str:
    """The agent's URL as this request reached it (`ws`/`wss` become `http`/`https`), without
    `rest` (the part of the path after the agent)."""
    url = conn.url
    scheme = {"ws": "http", "wss": "https"}.get(url.scheme, url.scheme)
    path = url.path
    if rest and path.endswith(rest):
        path = path[: -len(rest)]
    return f"{scheme}://{url.netloc}{path.rstrip('/')}"


def callback_url(base: str) -> str:
    return f"{base.rstrip('/')}/{CALLBACK_PATH}"


async def handle_callback(clients: MCPClients, request: Request) -> Response:
    """Answer the callback with a page (200 when the server is connected, 400 otherwise)."""
    outcome = await clients.finish_auth(dict(request.query_params))
    title = "MCP server connected" if outcome.ok else "MCP sign-in failed"
    body = (f"<!doctype html><html><head><meta charset=utf-8><title>{title}</title></head>"
            f"<body style=\"font-family: system-ui, sans-serif; max-width: 40em; margin: 3em auto\">"
            f"<h1>{title}</h1><p>{html.escape(outcome.message)}</p><p>You can close this window.</p></body></html>")
    return HTMLResponse(body, status_code=200 if outcome.ok else 400,
                        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"})
