"""MCP servers as an agent's tools (the client side), and agents served over MCP (the server side).

    await agent.add_mcp_server("docs", "https://example.com/mcp")
    await agent.add_mcp_server("files", command="python", args=["-m", "my_server"])

What it trusts: the agent's owner, who adds servers (server code; no client adds one unless the
agent exposes a `@callable` that does). A server's tool results are untrusted data for the
model, never instructions to the framework: they become tool outputs, capped like other tools'
outputs. Server URLs are http(s); with `mcp_url_policy` (a `think.net.policy.UrlPolicy`) they
must pass it when added, and every connection is checked at connect time (also the requests of
an OAuth sign-in, `think.mcp.oauth`, whose callback trusts only a `state` it handed out). Each server is a
background connection (`think.mcp.connection`) that never blocks the agent's start or a turn.
"""

from think.mcp.api import MCPAPI
from think.mcp.backoff import Backoff
from think.mcp.clients import MCPClients, check_url
from think.mcp.errors import MCPServerUnavailable
from think.mcp.store import MIGRATIONS, ServerSpec

__all__ = ["MCPAPI", "MIGRATIONS", "Backoff", "MCPClients", "MCPServerUnavailable", "ServerSpec",
           "check_url"]
