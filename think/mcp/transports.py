"""From a `ServerSpec` to an SDK `Client`: streamable HTTP, SSE or a stdio subprocess.

`auto` tries streamable HTTP first and falls back to SSE when that fails (what the original
does); the error of each attempt is kept, so a server that speaks neither is reported with both.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.session import MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from think._version import __version__
from think.mcp.errors import describe, leaves
from think.mcp.store import ServerSpec
from think.net.client import create_httpx2_client, default_ssl_context
from think.net.policy import UrlPolicy

CLIENT_INFO = Implementation(name="think", version=__version__)


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every connection: loading the CA bundle takes ~40 ms of the event
    loop's time, which 20 servers reconnecting at start would otherwise spend 20 times."""
    return default_ssl_context()


def _http(spec: ServerSpec, policy: UrlPolicy | None, headers: dict[str, str] | None = None,
          timeout: Any = None, auth: Any = None) -> httpx2.AsyncClient:
    """The HTTP client of one connection; with a URL policy every request and the address each
    connection goes to are checked (`think.net.client`)."""
    timeout = timeout if timeout is not None else httpx2.Timeout(30.0, read=300.0)
    headers = headers if headers is not None else (spec.headers or None)
    if policy is not None:
        client: httpx2.AsyncClient = create_httpx2_client(policy, headers, timeout, auth, verify=_tls())
        return client
    return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, verify=_tls())


def _client(spec: ServerSpec, transport: str, policy: UrlPolicy | None, stack: AsyncExitStack,
            auth: httpx2.Auth | None = None, **options: Any) -> Client:
    if transport == "stdio":
        params = StdioServerParameters(command=spec.command or "", args=list(spec.args), env=spec.env, cwd=spec.cwd)
        return Client(params, client_info=CLIENT_INFO, **options)
    assert spec.url is not None
    if transport == "sse":
        def factory(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
            return _http(spec, policy, headers, timeout, auth)

        return Client(sse_client(spec.url, headers=spec.headers or None, httpx_client_factory=factory, auth=auth),
                      client_info=CLIENT_INFO, **options)
    http = _http(spec, policy, auth=auth)
    stack.push_async_callback(http.aclose)  # the SDK leaves a client it was given open
    return Client(streamable_http_client(spec.url, http_client=http), client_info=CLIENT_INFO, **options)


@asynccontextmanager
async def connect(spec: ServerSpec, *, read_timeout: float, url_policy: UrlPolicy | None = None,
                  message_handler: MessageHandlerFnT | None = None,
                  auth: httpx2.Auth | None = None) -> AsyncIterator[Client]:
    """An entered SDK client for `spec` (the handshake done), closed when the block ends. `auth`
    (the SDK's OAuth provider, `think.mcp.oauth`) signs every request of a URL transport."""
    order = ["streamable-http", "sse"] if spec.transport == "auto" else [spec.transport]
    errors: list[str] = []
    for transport in order:
        async with AsyncExitStack() as stack:
            client = _client(spec, transport, url_policy, stack, auth, read_timeout_seconds=read_timeout,
                             message_handler=message_handler)
            try:
                entered = await stack.enter_async_context(client)
            except Exception as exc:
                if auth is not None and _signing_in_failed(exc):
                    raise  # not a transport question: another transport would only sign in again
                errors.append(f"{transport}: {describe(exc)}" if len(order) > 1 else describe(exc))
                continue
            yield entered
            return
    raise ConnectionError("; ".join(errors))


def _signing_in_failed(exc: BaseException) -> bool:
    from mcp.client.auth import OAuthFlowError

    return any(isinstance(leaf, OAuthFlowError) for leaf in leaves(exc))


__all__ = ["CLIENT_INFO", "connect"]
