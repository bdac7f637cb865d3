"""`MCPClients`: an agent's MCP servers: the stored list, one connection each, their tools.

`restore()` (at the agent's start) starts a background connection per stored server and
returns at once; `add()` stores a server and waits (at most `timeout`) for its first attempt;
`remove()` ends the connection and deletes the row. Every change of any connection calls the
listeners with nothing: they read `state()` (the `cf_agent_mcp_servers` payload) themselves.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from think.errors import ConfigurationError
from think.mcp.backoff import Backoff
from think.mcp.errors import MCPServerUnavailable
from think.mcp.store import TRANSPORTS, ServerSpec, ServerStore, Transport
from think.messages import JSONObject
from think.storage import Database
from think.tools.tool import Tool

if TYPE_CHECKING:  # the SDK is imported when the first server connects, not with `think`
    from mcp.types import GetPromptResult, ReadResourceResult

    from think.mcp.connection import MCPConnection
    from think.mcp.oauth import Callback, OAuthFlows
    from think.net.policy import UrlPolicy

log = logging.getLogger("think.mcp")

def check_url(url: str, policy: UrlPolicy | None) -> None:
    """Raise `ConfigurationError` for a server URL that may not be added. Without a policy: any
    `http://` or `https://` URL with a host (the agent's owner adds them); with one, what
    `policy.check` allows (its allowlist, blocked hosts, no credentials in the URL)."""
    if not isinstance(url, str):
        raise ConfigurationError(f"an MCP server URL is a string, not {type(url).__name__}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"an MCP server URL must be http:// or https:// with a host, not {url!r}")
    if policy is not None and not (decision := policy.check(url)):
        raise ConfigurationError(f"the MCP server URL {url!r} is refused by the URL policy: {decision.reason}")


class MCPClients:
    """See the module docstring."""

    def __init__(self, db: Database, *, call_timeout: float = 60.0, connect_timeout: float = 30.0,
                 url_policy: UrlPolicy | None = None, backoff: Backoff | None = None,
                 auth_timeout: float = 600.0) -> None:
        self.db = db
        self.store = ServerStore(db)
        self.auth_timeout = auth_timeout
        self._oauth: OAuthFlows | None = None
        self._starter: asyncio.TimerHandle | None = None  # restore()'s deferred start
        self.call_timeout = call_timeout
        self.connect_timeout = connect_timeout
        self.url_policy = url_policy
        self.backoff = backoff or Backoff()
        self.connections: dict[str, MCPConnection] = {}
        self._listeners: list[Callable[[], None]] = []
        self._tools: dict[str, Tool] | None = None
        self._offline: dict[str, Tool] | None = None

    # ---- listeners ---------------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` after every change; returns the function that unsubscribes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _changed(self, connection: MCPConnection | None = None) -> None:
        self._tools = self._offline = None
        if connection is not None and connection.state == "ready" and connection.spec.id in self.connections:
            self.store.cache_tools(connection.spec.id, [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                                                        for t in connection.tools])
        for listener in tuple(self._listeners):
            try:
                listener()
            except Exception:
                log.exception("an MCP listener failed")

    # ---- servers -----------------------------------------------------------------------------------

    def restore(self, delay: float = 0.0) -> None:
        """Connect every stored server in the background (never waits for one), `delay` seconds
        from now: the agent's first turn after a start runs before the connections' work (the
        SDK spends ~15 ms of this event loop's time per server on a handshake and its lists).
        Whatever needs them sooner starts them at once: `wait_for_connections`, a direct call."""
        for spec in self.store.all():
            if spec.id not in self.connections:
                self._open(spec, start=False)
        if delay <= 0:
            self._start_pending()
        elif self._starter is None and self.connections:
            self._starter = asyncio.get_running_loop().call_later(delay, self._start_pending)

    def _start_pending(self) -> None:
        if self._starter is not None:
            self._starter.cancel()
            self._starter = None
        for connection in self.connections.values():
            connection.start()  # a started one: nothing

    def _open(self, spec: ServerSpec, *, start: bool = True) -> MCPConnection:
        from think.mcp.connection import MCPConnection

        connection = MCPConnection(spec, self._changed, connect_timeout=self.connect_timeout, backoff=self.backoff,
                                   url_policy=self.url_policy, oauth=self.oauth if spec.callback_url else None)
        self.connections[spec.id] = connection
        if start:
            connection.start()
        return connection

    @property
    def oauth(self) -> OAuthFlows:
        """The OAuth flows and stored tokens of the servers (`think.mcp.oauth`; loads the SDK)."""
        if self._oauth is None:
            from think.mcp.oauth import OAuthFlows

            self._oauth = OAuthFlows(self.db, auth_timeout=self.auth_timeout)
        return self._oauth

    async def add(self, name: str, url: str | None = None, *, transport: Transport | None = None,
                  headers: Mapping[str, str] | None = None, command: str | None = None,
                  args: Sequence[str] = (), env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
                  timeout: float | None = 10.0, callback_url: str | None = None) -> JSONObject:  # noqa: ASYNC109
        """Store a server and connect it; wait up to `timeout` seconds for the first attempt (a
        server that needs OAuth: until its `auth_url` is known)."""
        spec = self._spec(name, url, transport=transport, headers=headers, command=command, args=args,
                          env=env, cwd=cwd)
        if callback_url is not None and spec.url is not None:
            spec = dataclasses.replace(spec, callback_url=callback_url)
        self.store.add(spec)
        connection = self._open(spec)
        if timeout:
            with anyio.move_on_after(timeout):
                await connection.wait_settled()
        return {"id": spec.id, "state": connection.state, "auth_url": connection.auth_url, "error": connection.error}

    def _spec(self, name: str, url: str | None, *, transport: Transport | None, headers: Mapping[str, str] | None,
              command: str | None, args: Sequence[str], env: Mapping[str, str] | None,
              cwd: str | Path | None) -> ServerSpec:
        if not isinstance(name, str) or not name.strip():
            raise ConfigurationError("an MCP server needs a name")
        if (url is None) == (command is None):
            raise ConfigurationError("give an MCP server either a url or a command (stdio), not both")
        server_id = uuid.uuid4().hex[:12]
        if command is not None:
            if transport not in (None, "stdio"):
                raise ConfigurationError(f"a command runs over stdio, not {transport!r}")
            if not isinstance(command, str) or not command:
                raise ConfigurationError("the MCP server's command is empty")
            return ServerSpec(id=server_id, name=name.strip(), transport="stdio", command=command,
                              args=tuple(str(a) for a in args), env=dict(env) if env is not None else None,
                              cwd=str(cwd) if cwd is not None else None)
        chosen = transport or "auto"
        if chosen not in TRANSPORTS or chosen == "stdio":
            raise ConfigurationError(f"transport must be 'auto', 'streamable-http' or 'sse', not {transport!r}")
        assert url is not None
        check_url(url, self.url_policy)
        clean = {str(k): str(v) for k, v in (headers or {}).items()}
        return ServerSpec(id=server_id, name=name.strip(), transport=chosen, url=url, headers=clean)

    async def remove(self, server_id: str) -> bool:
        """Disconnect and forget a server; False if there was none with this id."""
        connection = self.connections.pop(server_id, None)
        found = self.store.remove(server_id)
        if self._oauth is not None:
            self._oauth.forget(server_id)
        if connection is not None:
            await connection.stop()
        self._changed()
        return found or connection is not None

    async def stop(self) -> None:
        """End every connection (hibernation, shutdown); the stored list stays."""
        if self._starter is not None:
            self._starter.cancel()
            self._starter = None
        connections, self.connections = list(self.connections.values()), {}
        async with anyio.create_task_group() as tasks:  # each may take a round trip (an HTTP DELETE)
            for connection in connections:
                tasks.start_soon(connection.stop)
        self._tools = self._offline = None

    async def wait_for_connections(self, timeout: float | None) -> None:  # noqa: ASYNC109
        """Until no server is `connecting` or `discovering` (at most `timeout` seconds); servers
        whose restore was deferred start now."""
        self._start_pending()
        pending = [c for c in self.connections.values() if c.state in ("connecting", "discovering")]
        if not pending:
            return
        with anyio.move_on_after(timeout):
            for connection in pending:
                await connection.wait_settled()

    def servers(self) -> list[JSONObject]:
        """Every server with its state: `{id, name, server_url, transport, state, error, tools}`."""
        out: list[JSONObject] = []
        for spec in self.store.all():
            connection = self.connections.get(spec.id)
            out.append({"id": spec.id, "name": spec.name, "server_url": spec.server_url,
                        "transport": spec.transport, "state": connection.state if connection else "connecting",
                        "error": connection.error if connection else None,
                        "auth_url": connection.auth_url if connection else None,
                        "tools": len(connection.tools) if connection else 0})
        return out

    async def finish_auth(self, params: Mapping[str, str]) -> Callback:
        """The OAuth callback's query (`code`, `state`, or `error`): hand it to the waiting flow
        and wait (at most the connect timeout) until that server is ready or has failed. A
        `state` no flow waits for is refused and nothing is stored (`think.mcp.oauth`)."""
        from think.mcp.oauth import Callback

        if not self.connections:
            return Callback(False, None, "This sign-in link is not valid or has expired (unknown state). "
                            "Nothing was stored.")
        outcome = self.oauth.callback(dict(params))
        connection = self.connections.get(outcome.server_id or "")
        if connection is None or not outcome.ok:
            return outcome
        with anyio.move_on_after(self.connect_timeout):
            await connection.wait_settled()
        if connection.state == "ready":
            return Callback(True, outcome.server_id, f"Signed in: the MCP server {connection.spec.name!r} is "
                            f"connected ({len(connection.tools)} tools).")
        return Callback(False, outcome.server_id, f"Signed in, but the MCP server {connection.spec.name!r} is "
                        f"{connection.state}: {connection.error or 'still connecting'}")

    # ---- tools, prompts, resources -----------------------------------------------------------------

    def tools(self, *, offline: bool = False) -> dict[str, Tool]:
        """The tools of every ready server, by their merged names (rebuilt after a change).

        `offline=True` adds the last known tools of servers that are not ready (a call of one
        is a tool error saying so): what crash recovery and the trust checks need to know a
        cut-off call of such a tool as a server tool's call, never a client's."""
        if self._tools is None:
            self._tools = self._build(lambda c: c.tools if c.state == "ready" else [])
        if not offline:
            return dict(self._tools)
        if self._offline is None:
            self._offline = self._build(lambda c: c.tools if c.state == "ready" else self._cached(c.spec.id))
        return dict(self._offline)

    def _build(self, listed: Callable[[MCPConnection], Sequence[Any]]) -> dict[str, Tool]:
        tools: dict[str, Tool] = {}
        if not self.connections:
            return tools  # an agent without MCP servers never loads the SDK (~0.8 s of imports)
        from think.mcp.tools import as_tool, tool_name

        for connection in self.connections.values():
            for mcp_tool in listed(connection):
                name = tool_name(connection.spec.name, mcp_tool.name, tools)
                tools[name] = as_tool(connection.spec.name, mcp_tool, name, self._caller(connection))
        return tools

    def _cached(self, server_id: str) -> list[Any]:
        from mcp.types import Tool as MCPTool

        out: list[Any] = []
        for raw in self.store.cached_tools(server_id):
            try:
                out.append(MCPTool.model_validate(raw))
            except ValueError:
                continue
        return out

    def _caller(self, connection: MCPConnection) -> Callable[[str, dict[str, Any]], Any]:
        def call(name: str, arguments: dict[str, Any]) -> Any:
            return connection.call_tool(name, arguments, timeout=self.call_timeout)

        return call

    def _connection(self, server_id: str) -> MCPConnection:
        connection = self.connections.get(server_id)
        if connection is None:
            raise MCPServerUnavailable(f"no MCP server with id {server_id!r}")
        connection.start()  # one whose deferred restore has not begun: asked for, so now
        return connection

    async def call_tool(self, server_id: str, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Call a tool directly (also with `include_mcp_tools = False`); the SDK's result."""
        return await self._connection(server_id).call_tool(name, dict(arguments or {}), timeout=self.call_timeout)

    async def get_prompt(self, server_id: str, name: str,
                         arguments: Mapping[str, str] | None = None) -> GetPromptResult:
        return await self._connection(server_id).get_prompt(name, dict(arguments) if arguments else None,
                                                            timeout=self.call_timeout)

    async def read_resource(self, server_id: str, uri: str) -> ReadResourceResult:
        return await self._connection(server_id).read_resource(uri, timeout=self.call_timeout)

    def prompts(self) -> list[JSONObject]:
        return [{**p.model_dump(mode="json", by_alias=True, exclude_none=True), "serverId": sid}
                for sid, c in self.connections.items() for p in c.prompts]

    def resources(self) -> list[JSONObject]:
        return [{**r.model_dump(mode="json", by_alias=True, exclude_none=True), "serverId": sid}
                for sid, c in self.connections.items() for r in c.resources]

    # ---- the wire ----------------------------------------------------------------------------------

    def state(self) -> JSONObject:
        """The `mcp` payload of `cf_agent_mcp_servers`, in the `agents` client's `MCPServersState` shape."""
        servers: dict[str, Any] = {}
        for spec in self.store.all():
            connection = self.connections.get(spec.id)
            servers[spec.id] = {
                "name": spec.name, "server_url": spec.server_url,
                "auth_url": connection.auth_url if connection else None,
                "state": connection.state if connection else "connecting",
                "error": connection.error if connection else None,
                "instructions": connection.instructions if connection else None,
                "capabilities": connection.capabilities if connection and connection.state == "ready" else None,
            }
        tools = [{**t.model_dump(mode="json", by_alias=True, exclude_none=True), "serverId": sid}
                 for sid, c in self.connections.items() if c.state == "ready" for t in c.tools]
        return {"prompts": self.prompts(), "resources": self.resources(), "servers": servers, "tools": tools}
