"""`MCPConnection`: one MCP server, kept connected by a background task of its own.

The task connects (`connecting`), lists the server's tools, prompts and resources
(`discovering`), then is `ready` until the connection drops or the server is removed. A failure
at any step is `failed` with its error, and the task tries again after a backoff (1 s doubling
to a minute); it never runs inside a turn or `on_start`, which only read the last known state.

Calls come from other tasks (turns, hooks). A call races the connection: if the connection
ends while the call waits (the server process died, the HTTP stream broke), the call fails at
once with `MCPServerUnavailable` instead of waiting for its timeout. Tool-list changes arrive
as a `subscriptions/listen` event (2026-07-28 servers) or as `notifications/tools/list_changed`
(earlier ones); either way the lists are fetched again and the change is announced.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Literal, TypeVar

import anyio
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.subscriptions import ListenNotSupportedError, Subscription
from mcp.types import CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, Tool

from think._tasks import cancel_and_wait
from think.mcp.backoff import Backoff
from think.mcp.errors import MCPServerUnavailable, describe
from think.mcp.oauth import NoCallback, OAuthFlows
from think.mcp.store import ServerSpec
from think.mcp.transports import connect
from think.net.policy import UrlPolicy

log = logging.getLogger("think.mcp")

State = Literal["connecting", "authenticating", "discovering", "ready", "failed"]
_T = TypeVar("_T")
_LIST_CHANGES = ("notifications/tools/list_changed", "notifications/prompts/list_changed",
                 "notifications/resources/list_changed")


class MCPConnection:
    """One server's connection, state and lists. See the module docstring."""

    def __init__(self, spec: ServerSpec, on_change: Callable[[MCPConnection], None], *,
                 connect_timeout: float = 30.0, backoff: Backoff | None = None,
                 url_policy: UrlPolicy | None = None, oauth: OAuthFlows | None = None) -> None:
        self.spec = spec
        self.state: State = "connecting"
        self.error: str | None = None
        self.auth_url: str | None = None
        """While `authenticating`: where the user signs in (the authorization server's page)."""
        self.tools: list[Tool] = []
        self.prompts: list[Prompt] = []
        self.resources: list[Resource] = []
        self.capabilities: dict[str, Any] | None = None
        self.instructions: str | None = None
        self._on_change = on_change
        self._connect_timeout = connect_timeout
        self._backoff = backoff or Backoff()
        self._url_policy = url_policy
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False  # set by `stop()`: `_run` makes no further attempt
        self._settled: anyio.Event | None = None  # set when an attempt ends: ready or failed
        self._ended: anyio.Event | None = None  # set when the current session ends
        self._stale: anyio.Event | None = None  # set when the server says its lists changed
        self._reached_ready = False
        self._watch: anyio.CancelScope | None = None  # the connect timeout of the current attempt
        self._auth: OAuthClientProvider | NoCallback | None = None
        if oauth is not None and spec.url is not None and spec.callback_url is not None:
            self._auth = oauth.provider(spec.id, spec.url, spec.callback_url, self._on_auth_url)
        elif spec.url is not None:
            self._auth = NoCallback()

    # ---- lifecycle ---------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether the background task runs (a restored server's may not have begun yet)."""
        return self._task is not None

    def start(self) -> None:
        """Start the background task (in a fresh context: never part of the caller's turn)."""
        if self._task is not None:
            return
        self._stopping = False
        self._settled = anyio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"think-mcp:{self.spec.name}",
                                                            context=contextvars.Context())

    async def stop(self) -> None:
        """End the connection and its task (removal, hibernation, shutdown)."""
        task, self._task = self._task, None
        self._stopping = True  # even if the SDK absorbs the cancellation, the task ends after this attempt
        await cancel_and_wait(task)

    async def wait_settled(self) -> None:
        """Until the first attempt since `start()` is ready or has failed."""
        if self._settled is not None:
            await self._settled.wait()

    def _set(self, state: State, error: str | None = None) -> None:
        self.state, self.error = state, error
        if state == "connecting" and self._settled is not None and self._settled.is_set():
            self._settled = anyio.Event()  # a reconnect: waiters wait for this attempt
        if state in ("ready", "failed", "authenticating") and self._settled is not None:
            self._settled.set()
        self._on_change(self)

    async def _run(self) -> None:
        attempt = 0
        while not self._stopping:
            self._set("connecting")
            self._reached_ready = False
            try:
                await self._session()
                error = "the connection ended"
            except Exception as exc:
                error = describe(exc)
            if self._stopping:
                return
            log.info("MCP server %s (%s) is unavailable: %s", self.spec.name, _shown(self.spec.server_url), error)
            self.tools, self.prompts, self.resources = [], [], []
            self._set("failed", error)
            attempt = 0 if self._reached_ready else attempt
            await anyio.sleep(self._backoff.delay(attempt))
            attempt += 1

    async def _session(self) -> None:
        self._ended, self._stale = anyio.Event(), anyio.Event()
        ready = anyio.Event()
        timed_out = False
        try:
            async with anyio.create_task_group() as watch:
                async def watchdog() -> None:
                    nonlocal timed_out
                    with anyio.CancelScope(deadline=anyio.current_time() + self._connect_timeout) as self._watch:
                        await ready.wait()
                        return
                    timed_out = True
                    watch.cancel_scope.cancel()

                watch.start_soon(watchdog)
                async with connect(self.spec, read_timeout=self._connect_timeout, url_policy=self._url_policy,
                                   message_handler=self._on_message, auth=self._auth) as client:
                    self._set("discovering")
                    async with _listening(client) as events:  # before listing: no change is missed
                        await self._discover(client)
                        self._client = client
                        ready.set()
                        self._reached_ready = True
                        self._set("ready")
                        log.info("MCP server %s (%s) is ready: %d tools, %d prompts, %d resources", self.spec.name,
                                 _shown(self.spec.server_url), len(self.tools), len(self.prompts),
                                 len(self.resources))
                        await self._serve(client, events)
                watch.cancel_scope.cancel()
        finally:
            self._client = None
            self._watch = None
            self.auth_url = None
            self._ended.set()
        if timed_out:
            raise TimeoutError(f"no answer within {self._connect_timeout:g} s (connect, initialize or list)")

    def _on_auth_url(self, url: str | None) -> None:
        """The OAuth flow waits for the user (`url`: where they sign in), or stopped waiting
        (None). The connect timeout does not run while a person signs in."""
        if url is not None:
            self.auth_url = url
            if self._watch is not None:
                self._watch.deadline = math.inf
            self._set("authenticating")
            return
        self.auth_url = None
        if self._watch is not None:
            self._watch.deadline = anyio.current_time() + self._connect_timeout
        if self.state == "authenticating":  # a live session whose token was refused stays up meanwhile
            self._set("ready" if self._client is not None else "connecting")

    async def _discover(self, client: Client) -> None:
        caps = client.server_capabilities
        self.capabilities = caps.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.instructions = client.instructions
        self.tools = await _all_tools(client) if caps.tools is not None else []
        self.prompts = (await client.list_prompts(cache_mode="refresh")).prompts if caps.prompts is not None else []
        self.resources = ((await client.list_resources(cache_mode="refresh")).resources
                          if caps.resources is not None else [])

    async def _serve(self, client: Client, events: Subscription | None) -> None:
        """While ready: refetch the lists when they change; return when the connection is lost."""
        assert self._ended is not None and self._stale is not None
        async with anyio.create_task_group() as tasks:
            if events is not None:
                tasks.start_soon(self._consume, events)
            while True:
                await self._stale.wait()
                self._stale = anyio.Event()
                await self._discover(client)
                self._on_change(self)

    async def _consume(self, events: Subscription) -> None:
        async for _event in events:
            self._mark_stale()
        raise ConnectionError("the server closed its event stream")

    async def _on_message(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method in _LIST_CHANGES:
            self._mark_stale()

    def _mark_stale(self) -> None:
        if self._stale is not None:
            self._stale.set()

    # ---- calls -------------------------------------------------------------------------------------

    def _ready_client(self) -> tuple[Client, anyio.Event]:
        if self._client is None or self._ended is None or self.state != "ready":
            detail = f": {self.error}" if self.error else ""
            raise MCPServerUnavailable(f"MCP server {self.spec.name!r} is not connected ({self.state}{detail})")
        return self._client, self._ended

    async def call_tool(self, name: str, arguments: dict[str, Any], *,
                        timeout: float) -> CallToolResult:  # noqa: ASYNC109
        """Call a tool; `MCPServerUnavailable` if the server is not ready or drops meanwhile,
        `TimeoutError` after `timeout` seconds."""
        from think import observe

        client, ended = self._ready_client()
        with observe.mcp_call(self.spec.name, name, self.spec.transport) as span:  # records a raised error itself
            result = await _racing(ended, self.spec.name, timeout,
                                   lambda: client.call_tool(name, arguments, read_timeout_seconds=timeout))
            span.finished("error" if result.is_error else "ok", "the tool answered isError")
            return result

    async def get_prompt(self, name: str, arguments: dict[str, str] | None, *,
                         timeout: float) -> GetPromptResult:  # noqa: ASYNC109
        client, ended = self._ready_client()
        return await _racing(ended, self.spec.name, timeout, lambda: client.get_prompt(name, arguments))

    async def read_resource(self, uri: str, *, timeout: float) -> ReadResourceResult:  # noqa: ASYNC109
        client, ended = self._ready_client()
        return await _racing(ended, self.spec.name, timeout, lambda: client.read_resource(uri))


@asynccontextmanager
async def _listening(client: Client) -> AsyncIterator[Subscription | None]:
    """A `subscriptions/listen` stream of the list changes the server announces (None: the
    server announces none, or it is a 2025-era server whose notifications reach `_on_message`)."""
    caps = client.server_capabilities
    wanted = {"tools_list_changed": bool(caps.tools and caps.tools.list_changed),
              "prompts_list_changed": bool(caps.prompts and caps.prompts.list_changed),
              "resources_list_changed": bool(caps.resources and caps.resources.list_changed)}
    async with AsyncExitStack() as stack:
        events: Subscription | None = None
        if any(wanted.values()):
            try:
                events = await stack.enter_async_context(client.listen(
                    tools_list_changed=wanted["tools_list_changed"],
                    prompts_list_changed=wanted["prompts_list_changed"],
                    resources_list_changed=wanted["resources_list_changed"]))
            except ListenNotSupportedError:
                events = None
        yield events


async def _all_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages forever cannot hold the connection in `discovering`
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


async def _racing(ended: anyio.Event, server: str, timeout: float,  # noqa: ASYNC109
                  call: Callable[[], Awaitable[_T]]) -> _T:
    """`await call()`, unless the connection ends first or `timeout` passes."""
    outcome: list[_T] = []
    failure: list[BaseException] = []
    async with anyio.create_task_group() as tasks:
        async def watch() -> None:
            await ended.wait()
            tasks.cancel_scope.cancel()

        tasks.start_soon(watch)
        try:
            with anyio.fail_after(timeout):
                outcome.append(await call())
        except Exception as exc:
            failure.append(exc)
        tasks.cancel_scope.cancel()
    if outcome:
        return outcome[0]
    if failure and isinstance(failure[0], TimeoutError):
        raise TimeoutError(f"MCP server {server!r} did not answer within {timeout:g} s")
    if ended.is_set() or not failure:
        raise MCPServerUnavailable(f"MCP server {server!r} dropped the connection during the call")
    raise failure[0]


def _shown(url: str) -> str:
    """A server's address as logs show it: without a query string or user info (they can hold keys)."""
    if not url.startswith(("http://", "https://")):
        return url  # stdio: the command line
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
