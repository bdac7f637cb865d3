"""The MCP methods of `Think` (a mixin: the work is done by `think.mcp.clients.MCPClients`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from think.errors import ConfigurationError
from think.mcp.clients import MCPClients
from think.mcp.store import Transport
from think.messages import JSONObject

if TYPE_CHECKING:
    from mcp.types import CallToolResult, GetPromptResult, ReadResourceResult

    from think.net.policy import UrlPolicy

DEFAULT_WAIT = 10.0
"""Seconds `wait_for_mcp_connections = True` waits for connecting servers before a turn."""


class MCPAPI:
    """An agent's MCP servers: add, remove, list; their tools in every turn (see `think.mcp`)."""

    include_mcp_tools: ClassVar[bool] = True
    """Merge the tools of every ready MCP server into each turn (False: connections and direct
    calls stay, the model does not get the tools)."""
    wait_for_mcp_connections: ClassVar[bool | Mapping[str, float]] = False
    """Before each turn, wait for servers still connecting: True (up to 10 s) or
    `{"timeout": seconds}`; False: a turn uses the servers that are ready."""
    mcp_call_timeout: ClassVar[float] = 60.0
    """Seconds one MCP tool call (or prompt, resource read) may take."""
    mcp_connect_timeout: ClassVar[float] = 30.0
    """Seconds a server has to connect, answer the handshake and list its tools."""
    mcp_url_policy: ClassVar[UrlPolicy | None] = None
    """The `think.net.policy.UrlPolicy` server URLs must pass, checked when a server is added and
    on every connection (allowlist, no private or internal addresses unless it permits them).
    None (the default): any http(s) URL the agent's owner adds."""

    mcp_restore_delay: ClassVar[float] = 0.5
    """Seconds after the agent starts before its stored servers connect, so that the turn that
    woke it runs first (connecting costs this event loop ~15 ms a server). A turn that waits for
    them (`wait_for_mcp_connections`) or a direct call starts them at once; 0: at the start."""
    mcp_auth_timeout: ClassVar[float] = 600.0
    """Seconds a user has to finish an MCP server's OAuth sign-in (its `auth_url`); after that
    the flow is given up and a new one (a new `auth_url`) starts with the next reconnect."""

    mcp: MCPClients
    name: str

    def _kebab(self) -> str:
        kebab: str = getattr(type(self), "kebab_name")()  # noqa: B009 (the facade's classmethod)
        return kebab

    def _mcp_clients(self, db: Any) -> MCPClients:
        return MCPClients(db, call_timeout=self.mcp_call_timeout, connect_timeout=self.mcp_connect_timeout,
                          url_policy=self.mcp_url_policy, auth_timeout=self.mcp_auth_timeout)

    async def add_mcp_server(self, name: str, url: str | None = None, *, transport: Transport = "auto",
                             headers: Mapping[str, str] | None = None, command: str | None = None,
                             args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                             cwd: str | Path | None = None, callback_host: str | None = None,
                             agents_prefix: str = "agents",
                             timeout: float | None = 10.0) -> JSONObject:  # noqa: ASYNC109
        """Add an MCP server, stored in this agent's database and reconnected on every start.

        A remote server: `add_mcp_server("docs", "https://…/mcp", transport="auto" |
        "streamable-http" | "sse", headers={…})`. A local one over stdio:
        `add_mcp_server("files", command="python", args=["-m", "my_server"], env={…}, cwd=…)`.
        Waits up to `timeout` seconds for the first connection attempt and returns
        `{"id", "state", "auth_url", "error"}`; a server that failed is kept and retried in the
        background (remove it with `remove_mcp_server(id)`).

        A server that requires OAuth answers with state `authenticating` and the `auth_url`
        where the user signs in; the authorization server sends them back to this agent's
        `…/callback` route. Its URL is the agent's URL as the current request reached it (a
        `@callable` or `on_request` served by `think serve`), or
        `{callback_host}/{agents_prefix}/<agent>/<name>/callback` when `callback_host` is given.
        """
        from think.mcp.callback import AGENT_URL, callback_url

        redirect: str | None = None
        if url is not None and callback_host is not None:
            base = f"{callback_host.rstrip('/')}/{agents_prefix.strip('/')}/{self._kebab()}/{self.name}"
            if urlsplit(base).scheme not in ("http", "https") or not urlsplit(base).hostname:
                raise ConfigurationError(f"callback_host must be an http(s) origin, not {callback_host!r}")
            redirect = callback_url(base)
        elif url is not None and (here := AGENT_URL.get()) is not None:
            redirect = callback_url(here)
        return await self.mcp.add(name, url, transport=None if command is not None and transport == "auto"
                                  else transport, headers=headers, command=command, args=args, env=env,
                                  cwd=cwd, timeout=timeout, callback_url=redirect)

    async def remove_mcp_server(self, server_id: str) -> bool:
        """Disconnect a server and delete it; False if no server has this id."""
        return await self.mcp.remove(server_id)

    def mcp_servers(self) -> list[JSONObject]:
        """Every server: `{id, name, server_url, transport, state, error, auth_url, tools}`, with
        `state` one of `connecting`, `authenticating`, `discovering`, `ready`, `failed`."""
        return self.mcp.servers()

    def get_mcp_servers(self) -> JSONObject:
        """The `cf_agent_mcp_servers` payload: servers by id, their tools, prompts and resources."""
        return self.mcp.state()

    async def call_mcp_tool(self, server_id: str, name: str,
                            arguments: Mapping[str, Any] | None = None) -> CallToolResult:
        """Call a server's tool directly (the SDK's `CallToolResult`)."""
        result: CallToolResult = await self.mcp.call_tool(server_id, name, arguments)
        return result

    def list_prompts(self) -> list[JSONObject]:
        """The prompts of every ready server, each with its `serverId`."""
        return self.mcp.prompts()

    async def get_prompt(self, server_id: str, name: str,
                         arguments: Mapping[str, str] | None = None) -> GetPromptResult:
        return await self.mcp.get_prompt(server_id, name, arguments)

    def list_resources(self) -> list[JSONObject]:
        """The resources of every ready server, each with its `serverId`."""
        return self.mcp.resources()

    async def read_resource(self, server_id: str, uri: str) -> ReadResourceResult:
        return await self.mcp.read_resource(server_id, uri)

    async def _wait_for_mcp(self) -> None:
        """Before a turn: wait for connecting servers if `wait_for_mcp_connections` asks."""
        wait = self.wait_for_mcp_connections
        if wait is False or wait is None:
            return
        timeout = DEFAULT_WAIT if wait is True else float(dict(wait).get("timeout", DEFAULT_WAIT))
        await self.mcp.wait_for_connections(timeout)
