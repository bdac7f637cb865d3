"""`create_app()`: the ASGI app that serves agents at `/agents/<kebab-class>/<name>`.

    from think.server import create_app
    app = create_app([Assistant], data_dir="data")      # uvicorn module:app

The same address answers a WebSocket (the chat protocol, see `chat.py`) and HTTP:
`…/get-messages` (any method) returns the transcript as a JSON array, and every other path goes
to the agent's `on_request(request)`. An unknown class is a 400, a path outside the prefix a 404.
The app is a Starlette app and can be mounted in a larger one (run its lifespan, see
`AgentRegistry`).
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from think._version import __version__
from think.agent import Think
from think.errors import ConfigurationError
from think.mcp.callback import AGENT_URL, CALLBACK_PATH, agent_url, handle_callback
from think.messages import prepare_models
from think.models.of_agent import model_of, public_label
from think.protocol.codec import encode_message_list
from think.protocol.frames import ProtocolErrorFrame
from think.runtime.agent import Agent
from think.runtime.base import AgentElsewhere, AgentRuntime
from think.runtime.embedded import shared_runtime
from think.runtime.naming import check_agent_name
from think.server.agents import AgentHost, AgentRegistry
from think.server.connection import Connection, new_connection_id
from think.server.gate import ask
from think.server.uvicorn_log import quiet_invalid_utf8
from think.subagents.routing import SubAgentNotFound, is_sub_path, resolve_sub_path
from think.ui_protocols import CF_AGENT, ProtocolContext, check_protocols, protocol_routes

if TYPE_CHECKING:
    from think.browse.routes import BrowseHook

log = logging.getLogger("think.server")

DEFAULT_MAX_FRAME_BYTES = 32 * 1024 * 1024
"""The largest frame a client may send. A browser sends the whole transcript with every chat
request (as `useChat` does), and messages of any size are stored whole, so this bounds a
conversation's size as a client sees it (the original's platform allows 32 MiB per message)."""
CLOSE_TIMEOUT = 5.0
"""Seconds a closing socket may take to flush its queued frames."""
_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

BeforeConnect = Callable[[HTTPConnection, str, str], "Response | bool | Awaitable[Response | bool | None] | None"]
"""`on_before_connect(websocket_or_request, class_name, name)`: return None to let it through, a
`Response` (or False, or raise `HTTPException`) to refuse it before the upgrade."""


class _AgentServer:
    def __init__(self, classes: dict[str, type[Agent]], registry: AgentRegistry, *, cors: bool | Sequence[str],
                 on_before_connect: BeforeConnect | None, max_frame_bytes: int) -> None:
        self.classes = classes
        self.registry = registry
        self.runtime = registry.runtime
        self.cors = cors
        self.on_before_connect = on_before_connect
        self.max_frame_bytes = max_frame_bytes

    # ---- shared --------------------------------------------------------------------------------

    def _target(self, conn: HTTPConnection) -> tuple[type[Agent], str] | Response:
        cls = self.classes.get(conn.path_params["agent"])
        if cls is None:
            return PlainTextResponse("Invalid request", status_code=400)
        name = conn.path_params["name"]
        try:
            check_agent_name(name)
        except ConfigurationError as exc:
            return PlainTextResponse(f"Invalid agent name: {exc}", status_code=400)
        return cls, name

    async def _descend(self, conn: HTTPConnection, cls: type[Agent],
                       name: str) -> tuple[type[Agent], str, str] | Response:
        """The agent the path names (a sub-agent for `…/sub/<child>/<name>`) and the rest of it."""
        rest: str = conn.path_params.get("rest", "")
        if not is_sub_path(rest):
            return cls, name, rest
        try:
            return await resolve_sub_path(self.runtime, cls, name, rest)
        except SubAgentNotFound as exc:
            return PlainTextResponse(str(exc), status_code=404)

    async def _before_connect(self, conn: HTTPConnection, cls: type[Agent], name: str) -> Response | None:
        if self.on_before_connect is None:
            return None
        return await ask(self.on_before_connect, conn, cls.__name__, name, name="on_before_connect")

    async def admit(self, conn: HTTPConnection) -> tuple[type[Agent], str] | Response:
        """The path's class and name, or the refusal (a bad target, or `on_before_connect`'s)."""
        target = self._target(conn)
        if isinstance(target, Response):
            return target
        if (denial := await self._before_connect(conn, *target)) is not None:
            return denial
        return target

    def with_cors(self, endpoint: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        """`endpoint` answering CORS preflights and carrying the CORS headers, as the agent routes do."""
        async def wrapped(request: Request) -> Response:
            headers = self._cors_headers(request)
            if self.cors and request.method == "OPTIONS":
                return Response(status_code=204, headers=headers)
            response = await endpoint(request)
            response.headers.update(headers)
            return response

        return wrapped

    # ---- WebSocket -----------------------------------------------------------------------------

    async def websocket(self, websocket: WebSocket) -> None:
        target = self._target(websocket)
        if isinstance(target, Response):
            await _deny(websocket, target)
            return
        cls, name = target
        if (denial := await self._before_connect(websocket, cls, name)) is not None:
            await _deny(websocket, denial)
            return
        async with AsyncExitStack() as stack:
            try:
                found = await self._descend(websocket, cls, name)
                if isinstance(found, Response):
                    await _deny(websocket, found)
                    return
                cls, name, rest = found
                AGENT_URL.set(agent_url(websocket, rest))  # what its calls see (an MCP OAuth callback URL)
                host = await stack.enter_async_context(self.registry.use(cls, name))
            except AgentElsewhere as elsewhere:  # a process of the cluster has it open: relay there
                from think.cluster.proxy import forward_websocket

                await forward_websocket(websocket, elsewhere.url)
                return
            except Exception:
                log.exception("agent %s %r failed to start", cls.__name__, name)
                await _deny(websocket, PlainTextResponse("The agent failed to start", status_code=500))
                return
            await websocket.accept()
            connection = Connection(websocket, websocket.query_params.get("_pk") or new_connection_id())
            await self._serve(host, connection, websocket)

    async def _serve(self, host: AgentHost, connection: Connection, websocket: WebSocket) -> None:
        host.connect(connection)  # queues the connect sequence before anything is read
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.run_writer)
            try:
                await self._read(host, connection, websocket)
            finally:
                host.disconnect(connection)
                connection.close()
                tasks.cancel_scope.deadline = anyio.current_time() + CLOSE_TIMEOUT

    def _too_large(self, text: str) -> int | None:
        limit = self.max_frame_bytes
        if len(text) * 4 <= limit:  # UTF-8 needs at most 4 bytes a character
            return None
        size = len(text) if len(text) > limit else len(text.encode())
        return size if size > limit else None

    async def _read(self, host: AgentHost, connection: Connection, websocket: WebSocket) -> None:
        while not connection.closing:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                connection.disconnected()
                return
            text = message.get("text")
            if text is None:
                data = message.get("bytes") or b""
                if len(data) > self.max_frame_bytes:
                    connection.close(1009, f"Frame too large: {len(data)} bytes (limit {self.max_frame_bytes})")
                    return
                host.refuse(connection, ProtocolErrorFrame("Binary frames are not supported; send JSON text"))
                continue
            if (size := self._too_large(text)) is not None:
                connection.close(1009, f"Frame too large: {size} bytes (limit {self.max_frame_bytes})")
                return
            try:
                await host.receive(connection, text)
            except Exception:  # a bug of ours or in a hook; the connection and the agent go on
                log.exception("handling a frame from %s failed", connection.id)
                connection.send_frame(ProtocolErrorFrame("Internal error while handling the frame"))
            # receive() does not yield while frames are queued: let the tasks this frame started
            # (and other sockets) run before the next one, so a burst cannot starve them.
            await anyio.lowlevel.checkpoint()

    # ---- HTTP ----------------------------------------------------------------------------------

    def _cors_headers(self, request: Request) -> dict[str, str]:
        if not self.cors:
            return {}
        origin = request.headers.get("origin")
        if self.cors is True:
            allow = "*"
        elif origin is not None and origin in self.cors:
            allow = origin
        else:
            return {}
        headers = {"Access-Control-Allow-Origin": allow, "Access-Control-Allow-Methods": "GET, POST, HEAD, OPTIONS",
                   "Access-Control-Allow-Headers": "*", "Access-Control-Max-Age": "86400"}
        if allow != "*":
            headers["Vary"] = "Origin"
        return headers

    async def http(self, request: Request) -> Response:
        headers = self._cors_headers(request)
        if self.cors and request.method == "OPTIONS":
            return Response(status_code=204, headers=headers)
        response = await self._http(request)
        response.headers.update(headers)
        return response

    async def _http(self, request: Request) -> Response:
        target = self._target(request)
        if isinstance(target, Response):
            return target
        cls, name = target
        if (denial := await self._before_connect(request, cls, name)) is not None:
            return denial
        try:
            found = await self._descend(request, cls, name)
        except AgentElsewhere as elsewhere:
            return await _forward(request, elsewhere)
        except Exception:
            log.exception("%s %s failed", request.method, request.url.path)
            return PlainTextResponse("Internal Server Error", status_code=500)
        if isinstance(found, Response):
            return found
        cls, name, rest = found
        AGENT_URL.set(agent_url(request, rest))
        try:
            async with self.runtime.lease(cls, name) as agent:
                if isinstance(agent, Think) and (rest == "get-messages" or rest.endswith("/get-messages")):
                    return Response(encode_message_list(agent.session.history_json()), media_type="application/json")
                if isinstance(agent, Think) and rest == CALLBACK_PATH and request.method == "GET":
                    return await handle_callback(agent.mcp, request)  # an MCP server's OAuth sign-in came back
                result = agent.on_request(request)
                if inspect.isawaitable(result):
                    result = await result
        except HTTPException:
            raise
        except AgentElsewhere as elsewhere:
            return await _forward(request, elsewhere)
        except Exception:
            log.exception("%s %s failed", request.method, request.url.path)
            return PlainTextResponse("Internal Server Error", status_code=500)
        if not isinstance(result, Response):
            log.error("%s.on_request returned %r, not a Response", cls.__name__, type(result).__name__)
            return PlainTextResponse("Internal Server Error", status_code=500)
        return result


def _health(runtime: AgentRuntime) -> Callable[[Request], Awaitable[Response]]:
    """`GET /_think/health`: 200 while this process serves agents, 503 once it cannot (its cluster
    database session is gone) or is shutting down."""

    async def health(request: Request) -> Response:
        check = getattr(runtime, "healthy", None)
        ok = True if check is None else bool(check())
        return Response(orjson.dumps({"ok": ok, "node": getattr(runtime, "node_id", None)}),
                        status_code=200 if ok else 503, media_type="application/json")

    return health


def _ui_info(classes: list[type[Agent]], prefix: str, *, browse: bool) -> Callable[[], Awaitable[dict[str, Any]]]:
    """`GET /_think/info` for the web UI: the agents, and the model of the first chat agent."""
    model: list[str] = []

    async def model_label() -> str:
        chat = next((cls for cls in classes if issubclass(cls, Think)), None)
        if chat is None:
            return "none"
        try:
            return public_label(model_of(chat).model_id)  # no agent is woken to describe it; no URL shown
        except Exception as exc:  # the page shows it; chatting will report the error in full
            return f"unavailable ({type(exc).__name__})"

    intro = {cls.kebab_name(): _intro(cls) for cls in classes}

    async def info() -> dict[str, Any]:
        if not model:  # resolved once: it may probe the network (a local Ollama)
            model.append(await model_label())
        return {"agents": [cls.kebab_name() for cls in classes], "model": model[0], "demo": model[0] == "demo",
                "version": __version__, "prefix": prefix, "browse": browse,
                "welcome": {name: text for name, (text, _) in intro.items()},
                "suggestions": {name: list(prompts) for name, (_, prompts) in intro.items()},
                "max_attachment_bytes": {cls.kebab_name(): getattr(cls, "max_attachment_bytes", 0) for cls in classes}}

    return info


def _intro(cls: type[Agent]) -> tuple[str | None, tuple[str, ...]]:
    """An agent class's `welcome` text and `suggestions`, checked when the app is created."""
    welcome = getattr(cls, "welcome", None)
    suggestions = getattr(cls, "suggestions", ())
    if welcome is not None and not isinstance(welcome, str):
        raise TypeError(f"{cls.__name__}.welcome must be a string or None, not {type(welcome).__name__}")
    if isinstance(suggestions, str) or not all(isinstance(item, str) for item in suggestions):
        raise TypeError(f"{cls.__name__}.suggestions must be a sequence of strings, such as "
                        f"['What is 12*(3+4)?'], not {suggestions!r}")
    return welcome, tuple(item.strip() for item in suggestions if item.strip())


async def _forward(request: Request, elsewhere: AgentElsewhere) -> Response:
    from think.cluster.proxy import forward_http

    return await forward_http(request, elsewhere.url)


async def _deny(websocket: WebSocket, response: Response) -> None:
    try:
        await websocket.send_denial_response(response)
    except RuntimeError:  # the server cannot send an HTTP response to an upgrade request
        await websocket.close(code=1008)


def create_app(
    agents: Sequence[type[Agent]],
    *,
    data_dir: str | Path | None = None,
    prefix: str = "agents",
    cors: bool | Sequence[str] = False,
    on_before_connect: BeforeConnect | None = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    runtime: AgentRuntime | None = None,
    idle_timeout: float = 60.0,
    ui: bool = False,
    mcp: bool = False,
    mcp_allowed_hosts: Sequence[str] | None = None,
    browse: bool = False,
    browse_token: str | None = None,
    on_browse: BrowseHook | None = None,
    protocols: Sequence[str] = (CF_AGENT,),
    database: str | None = None,
) -> Starlette:
    """An ASGI app serving `agents` over WebSocket and HTTP at `/<prefix>/<kebab-class>/<name>`.

    * `data_dir`: where agents keep their SQLite files (default `THINK_DATA_DIR` or `.think`);
      the process-wide runtime for it is used, so `open_agent()` in the same process reaches
      the same instances. Pass `runtime` instead to use your own.
    * `cors`: True allows every origin, a list allows those origins (HTTP only, never upgrades).
    * `on_before_connect(websocket_or_request, class_name, name)`: may refuse a socket or a
      request before anything else happens (return a Response or False, or raise HTTPException).
    * `max_frame_bytes`: a larger incoming frame closes the socket with 1009.
    * `idle_timeout`: seconds an agent with no sockets and no work stays in memory (applied to
      the shared runtime; a `runtime` you pass keeps its own).
    * `ui`: also serve the chat web UI at `/` (see `think.web`).
    * `mcp`: also serve the agents as an MCP server (streamable HTTP) at `/mcp`: a tool
      `chat_<agent>` per chat agent class and its transcripts as resources (see `think.mcp.serve`).
      The endpoint answers only requests whose `Host` is a loopback name (DNS-rebinding guard)
      unless `mcp_allowed_hosts` names more (`"agents.example.com"`, `"10.0.0.5:8000"`, `:*` for
      any port).
    * `browse`: also serve the agents browser at `/_think/agents` (off by default): a read-only
      listing of the data directory's agents, instances and transcripts (see `think.browse.routes`).
      Readers need `browse_token` (default `THINK_BROWSE_TOKEN`) as a Bearer token when one is
      set, and pass `on_browse(request, agent, name)` (asked like `on_before_connect`) when given.
    * `database`: a `postgresql://` URL (default `THINK_DATABASE_URL`): serve the agents as one
      process of a cluster over that database instead of from `data_dir` (`think.cluster`; see
      docs/deployment.md). `GET /_think/health` tells a load balancer whether this process serves.
    """
    database = database if database is not None else os.environ.get("THINK_DATABASE_URL") or None
    if database is not None:
        if runtime is not None or data_dir is not None:
            raise ConfigurationError("pass database, or data_dir or runtime, to create_app: not two of them")
        if browse:
            raise ConfigurationError("browse=True reads a data directory; a cluster (database=) has none")
        from think.cluster import cluster_runtime

        runtime = cluster_runtime(database, idle_timeout=idle_timeout)
    if runtime is not None and data_dir is not None:
        raise ConfigurationError("pass either data_dir or runtime to create_app, not both")
    if not agents:
        raise ConfigurationError("create_app needs at least one agent class")
    classes: dict[str, type[Agent]] = {}
    for cls in agents:
        if not (isinstance(cls, type) and issubclass(cls, Agent)):
            raise ConfigurationError(f"{cls!r} is not an Agent class")
        kebab = cls.kebab_name()
        if kebab == "sub":
            raise ConfigurationError(f"{cls.__name__}: 'sub' is reserved for sub-agent paths")
        if kebab in classes and classes[kebab] is not cls:
            raise ConfigurationError(f"{cls.__name__} and {classes[kebab].__name__} both serve /{kebab}/")
        classes[kebab] = cls
    protocols = check_protocols([protocols] if isinstance(protocols, str) else protocols)
    if max_frame_bytes < 1024:
        raise ConfigurationError("max_frame_bytes must be at least 1024")
    quiet_invalid_utf8()  # uvicorn would log a traceback for every client that sends bad UTF-8
    if runtime is None:
        registry = AgentRegistry(shared_runtime(data_dir), idle_timeout=idle_timeout)
    else:
        registry = AgentRegistry(runtime)
    if (register := getattr(registry.runtime, "register", None)) is not None:
        register(*classes.values())  # so alarms can wake them after a restart
    server = _AgentServer(classes, registry, cors=cors, on_before_connect=on_before_connect,
                          max_frame_bytes=max_frame_bytes)

    extra: list[Any] = []
    mcp_running: Any = None
    if mcp:
        from think.mcp.serve import mcp_routes  # only servers that serve MCP load the SDK

        extra, mcp_running = mcp_routes(registry.runtime, list(classes.values()), allowed_hosts=mcp_allowed_hosts)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        prepare_models()
        async with AsyncExitStack() as outer:
            if database is not None:  # the cluster runtime is this app's own: it ends with it
                outer.push_async_callback(registry.runtime.close)
            async with registry.running(), AsyncExitStack() as stack:
                if mcp_running is not None:
                    await stack.enter_async_context(mcp_running)
                # entered after the MCP manager's task group, so it is exited before it (LIFO scopes)
                watch = await stack.enter_async_context(anyio.create_task_group())
                if database is not None:  # a process that lost its session stops (think.cluster.runtime)
                    from think.cluster.runtime import stop_process

                    watch.start_soon(registry.runtime.watch_session,  # type: ignore[attr-defined]
                                     lambda: stop_process(getattr(app.state, "request_stop", None)))
                try:
                    yield
                finally:
                    watch.cancel_scope.cancel()
                    if database is not None:
                        registry.runtime.drain()  # type: ignore[attr-defined]  # the ClusterRuntime

    base = "/" + "/".join(part for part in prefix.split("/") if part)
    if base == "/":
        base = ""
    context = ProtocolContext(classes=dict(classes), registry=registry, base=base, admit=server.admit,
                              authorize=server._before_connect, http=server.with_cors)
    routes = [*extra, Route("/_think/health", _health(registry.runtime), methods=["GET", "HEAD"]),
              *protocol_routes(protocols, context)]
    if CF_AGENT in protocols:
        routes += [
            WebSocketRoute(base + "/{agent}/{name}", server.websocket),
            WebSocketRoute(base + "/{agent}/{name}/{rest:path}", server.websocket),
            Route(base + "/{agent}/{name}", server.http, methods=_METHODS),
            Route(base + "/{agent}/{name}/{rest:path}", server.http, methods=_METHODS),
        ]
    if browse:
        from think.browse.routes import browse_routes  # only servers that browse load it

        token = browse_token if browse_token is not None else os.environ.get("THINK_BROWSE_TOKEN") or None
        browsed = getattr(registry.runtime, "data_dir", None)
        if browsed is None:
            raise ConfigurationError("browse=True needs a runtime with a data_dir")
        routes = [*browse_routes(browsed, token=token, on_browse=on_browse), *routes]
    if ui:
        from think.web import web_routes  # only servers with the UI load it

        routes = [*web_routes(_ui_info(list(classes.values()), base.lstrip("/"), browse=browse)), *routes]
    from think.observe.propagation import TraceContextMiddleware

    middleware = [Middleware(TraceContextMiddleware)]  # a request's `traceparent` parents what it starts
    if database is not None:  # the other processes' calls on agents open here (think.cluster.peers)
        from think.cluster.peers import PEER_PATH, peer_endpoint

        routes.insert(0, Route(PEER_PATH, peer_endpoint(registry.runtime), methods=["POST"]))  # type: ignore[arg-type]
    if database is not None:  # any HTTP endpoint whose agent is open in another process forwards there
        from think.cluster.proxy import ForwardingMiddleware

        middleware.append(Middleware(ForwardingMiddleware))
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware)
    app.state.registry = registry
    app.state.runtime = registry.runtime
    app.state.protocols = protocols
    return app
