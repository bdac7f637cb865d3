"""HTTP clients that enforce a `UrlPolicy` on every request and every connection.

`create_client(policy)` is an `httpx.AsyncClient` whose transport

* checks each request's URL with `policy.check` before anything is sent (redirects the client
  follows itself included), and
* opens connections through a network backend that resolves the host with `policy.resolve`
  and connects to the checked addresses only — never a second lookup by the operating system,
  so the address that was checked is the address connected to. TLS still verifies the
  certificate against the URL's host name (SNI is the name, not the address).

Proxies from the environment are never used (a proxy would make the checked address the
proxy's). `create_httpx2_client` is the same over `httpx2`, the HTTP client of the MCP SDK.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from http.cookiejar import Cookie, CookieJar
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import certifi
import httpcore
import httpx

if TYPE_CHECKING:
    from think.net.policy import Decision, UrlPolicy


class BlockedRequest(httpx.ConnectError):
    """A request or connection the URL policy refused; `decision` says which rule and why."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.reason)
        self.decision = decision


def default_ssl_context() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=certifi.where())


class PinnedBackend:
    """An httpcore network backend: resolve through the policy, connect to checked addresses."""

    def __init__(self, policy: UrlPolicy, inner: Any, timeout_error: type[Exception] = httpcore.ConnectTimeout) -> None:
        self.policy = policy
        self.inner = inner
        self.timeout_error = timeout_error

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,  # noqa: ASYNC109
                          local_address: str | None = None, socket_options: Iterable[Any] | None = None) -> Any:
        try:
            with anyio.fail_after(timeout):  # the lookup is part of connecting
                addresses = await self.policy.resolve(host, port)
        except TimeoutError as exc:
            raise self.timeout_error(f"looking up {host} timed out") from exc
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                                    socket_options=socket_options)
            except Exception as exc:  # the next address may answer
                failure = exc
        assert failure is not None  # resolve() never returns an empty list
        raise failure

    async def connect_unix_socket(self, path: str, timeout: float | None = None,  # noqa: ASYNC109
                                  socket_options: Iterable[Any] | None = None) -> Any:
        from think.net.policy import Decision

        raise BlockedRequest(Decision(False, None, "address", "Unix sockets are not allowed by the URL policy."))

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class PolicyTransport:
    """A transport (for `httpx` or `httpx2` clients) that checks each request's URL, then sends it
    over a connection pool whose connections are opened by `PinnedBackend`."""

    def __init__(self, policy: UrlPolicy, *, verify: ssl.SSLContext | bool = True, http2: bool = False,
                 limits: Any = None, check_allowlist: bool = True, httpx_module: Any = httpx,
                 httpcore_module: Any = httpcore) -> None:
        self.policy = policy
        self.check_allowlist = check_allowlist
        context = verify if isinstance(verify, ssl.SSLContext) else (
            default_ssl_context() if verify else httpx.create_ssl_context(verify=False))
        limits = limits or httpx_module.Limits(max_connections=100, max_keepalive_connections=20,
                                               keepalive_expiry=5.0)
        self._inner = httpx_module.AsyncHTTPTransport(verify=context, trust_env=False, http2=http2, limits=limits)
        if not isinstance(getattr(self._inner, "_pool", None), httpcore_module.AsyncConnectionPool):
            # Fail closed: without our pool the connections would not be checked.
            raise RuntimeError(f"{httpx_module.__name__} changed its transport; the URL policy cannot pin connections")
        self._inner._pool = httpcore_module.AsyncConnectionPool(
            ssl_context=context, max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            http1=True, http2=http2, network_backend=PinnedBackend(policy, httpcore_module.AnyIOBackend(),
                                                             httpcore_module.ConnectTimeout))

    async def handle_async_request(self, request: Any) -> Any:
        decision = self.policy.check(str(request.url), use_allowlist=self.check_allowlist)
        if not decision:
            raise BlockedRequest(decision)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> PolicyTransport:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None = None, exc: BaseException | None = None,
                        tb: TracebackType | None = None) -> None:
        await self.aclose()


class NoCookies(CookieJar):
    """A cookie jar that keeps nothing: for a client shared by callers whose cookies are their own
    (the browser's pages send theirs with each request)."""

    def set_cookie(self, cookie: Cookie) -> None:
        return None

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None


def create_client(policy: UrlPolicy, *, headers: dict[str, str] | None = None,
                  timeout: httpx.Timeout | float | None = 10.0, auth: httpx.Auth | None = None,
                  follow_redirects: bool = False, verify: ssl.SSLContext | bool = True,
                  http2: bool = False, check_allowlist: bool = True, keep_cookies: bool = False) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` that enforces `policy` (redirects it follows are re-checked by the
    transport, since each hop is a new request through it). `check_allowlist=False` leaves the
    allowlist to the caller (who checks each hop itself); every other rule stays.
    Cookies a response sets are dropped, never sent again: a client is pooled and shared (by every
    agent of a class, for the fetch tools), so a kept cookie would carry one person's session into
    another's requests. `keep_cookies=True` keeps them, for a client that serves one caller."""
    transport: Any = PolicyTransport(policy, verify=verify, http2=http2, check_allowlist=check_allowlist)
    cookies = None if keep_cookies else NoCookies()
    return httpx.AsyncClient(transport=transport, headers=headers, timeout=timeout, auth=auth, cookies=cookies,
                             follow_redirects=follow_redirects, trust_env=False)


def create_httpx2_client(policy: UrlPolicy, headers: dict[str, str] | None = None, timeout: Any = None,
                         auth: Any = None, *, follow_redirects: bool = False,
                         verify: ssl.SSLContext | bool = True) -> Any:
    """The same client over `httpx2`; `functools.partial(create_httpx2_client, policy)` fits the
    MCP SDK's `httpx_client_factory(headers, timeout, auth)`."""
    import httpcore2
    import httpx2

    transport: Any = PolicyTransport(policy, verify=verify, httpx_module=httpx2, httpcore_module=httpcore2)
    if timeout is None:
        timeout = httpx2.Timeout(30.0, read=300.0)
    return httpx2.AsyncClient(transport=transport, headers=headers, timeout=timeout, auth=auth,
                              follow_redirects=follow_redirects, trust_env=False)


async def read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    """A streamed response's body, at most `max_bytes` of it, and whether it was cut there (the
    rest is never read)."""
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.aiter_bytes():
        if total + len(chunk) > max_bytes:
            chunks.append(chunk[: max_bytes - total])
            return b"".join(chunks), True
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks), False
