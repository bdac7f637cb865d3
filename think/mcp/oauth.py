"""OAuth 2.1 for remote MCP servers: the SDK's `OAuthClientProvider`, stored in the agent's SQLite.

A server that answers 401 starts the SDK's flow inside the connection's first request:
protected-resource and authorization-server metadata discovery, dynamic client registration,
PKCE. Its authorization URL becomes the server's `auth_url` (state `authenticating`) and the flow
waits for the user's browser to come back to the agent's callback route (`…/callback`, see
`think.mcp.callback`) with a code, which the SDK exchanges for tokens. The registration and the
tokens are kept per server in `think_mcp_oauth`; the SDK refreshes an expired access token with
the refresh token (the expiry is stored too, so that holds across restarts).

What it trusts: a callback only for a `state` this process handed out for a flow that is still
waiting (single use, at most `auth_timeout` seconds old). Anything else is refused before the
SDK sees it: no code is exchanged and no token is stored. The PKCE verifier lives in the waiting
flow's memory only; a process that dies mid-flow starts a fresh flow (a new `auth_url`) when it
connects the server again, and the old link's callback is refused as expired. Every request of
the flow (discovery, registration, token) is sent by the connection's own HTTP client, so the
agent's `mcp_url_policy` checks it like any request to the server.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import orjson
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from think._version import __version__
from think.storage import Database

DEFAULT_AUTH_TIMEOUT = 600.0
"""Seconds a user has to finish signing in before the flow (and its `auth_url`) is given up."""


class NoCallback(httpx2.Auth):
    """The auth of a URL server added without a callback URL: a 401 fails the connection with
    what to do, instead of the transport's bare error."""

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        response = yield request
        if response.status_code == 401:
            raise OAuthFlowError("the server requires OAuth sign-in, and this agent has no callback URL for it: "
                                 "add the server from a request to the agent's server (a @callable or on_request "
                                 "under think serve), or pass add_mcp_server(..., callback_host='https://…')")


class OAuthStore:
    """Rows of `think_mcp_oauth`: a server's client registration and tokens."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def _row(self, server_id: str) -> dict[str, object] | None:
        rows = self.db.sql("SELECT client_info, tokens, expires_at FROM think_mcp_oauth WHERE server_id = ?",
                           server_id)
        return dict(rows[0]) if rows else None

    def _ensure(self, server_id: str) -> None:
        self.db.sql("INSERT OR IGNORE INTO think_mcp_oauth (server_id) VALUES (?)", server_id)

    def client_info(self, server_id: str) -> OAuthClientInformationFull | None:
        row = self._row(server_id)
        raw = row and row["client_info"]
        return OAuthClientInformationFull.model_validate_json(raw) if isinstance(raw, bytes) else None

    def set_client_info(self, server_id: str, info: OAuthClientInformationFull) -> None:
        self._ensure(server_id)
        self.db.sql("UPDATE think_mcp_oauth SET client_info = ? WHERE server_id = ?",
                    info.model_dump_json(exclude_none=True).encode(), server_id)

    def tokens(self, server_id: str) -> tuple[OAuthToken | None, float | None]:
        """The stored tokens and when the access token expires (None: unknown or never)."""
        row = self._row(server_id)
        raw = row and row["tokens"]
        if not isinstance(raw, bytes):
            return None, None
        expires = row["expires_at"] if row else None
        return OAuthToken.model_validate_json(raw), float(expires) if isinstance(expires, int | float) else None

    def set_tokens(self, server_id: str, tokens: OAuthToken) -> None:
        self._ensure(server_id)
        expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self.db.sql("UPDATE think_mcp_oauth SET tokens = ?, expires_at = ? WHERE server_id = ?",
                    orjson.dumps(tokens.model_dump(mode="json", exclude_none=True)), expires_at, server_id)

    def has_tokens(self, server_id: str) -> bool:
        return self.tokens(server_id)[0] is not None


@dataclass
class _Storage:
    """The SDK's `TokenStorage` for one server."""

    store: OAuthStore
    server_id: str

    async def get_tokens(self) -> OAuthToken | None:
        return self.store.tokens(self.server_id)[0]

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.store.set_tokens(self.server_id, tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.store.client_info(self.server_id)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.store.set_client_info(self.server_id, client_info)


@dataclass
class _Pending:
    """A flow waiting for the user's browser to come back."""

    server_id: str
    started: float
    on_auth_url: Callable[[str | None], None]
    arrived: anyio.Event = field(default_factory=anyio.Event)
    result: AuthorizationCodeResult | None = None
    error: str | None = None


@dataclass(frozen=True)
class Callback:
    """What the callback route did: `ok` (the code went to the waiting flow), the server's id
    (None when the state matched no flow) and a sentence for the page."""

    ok: bool
    server_id: str | None
    message: str


class OAuthFlows:
    """The OAuth side of an agent's MCP clients: one SDK provider per server, and the flows
    waiting for their callback, by `state`."""

    def __init__(self, db: Database, *, auth_timeout: float = DEFAULT_AUTH_TIMEOUT) -> None:
        self.store = OAuthStore(db)
        self.auth_timeout = auth_timeout
        self._pending: dict[str, _Pending] = {}

    def provider(self, server_id: str, server_url: str, callback_url: str,
                 on_auth_url: Callable[[str | None], None]) -> OAuthClientProvider:
        """An `httpx2.Auth` for one server's connection: `on_auth_url(url)` when the user has to
        sign in, `on_auth_url(None)` when that wait ends (the callback came, or the flow gave up)."""
        state_of_flow: list[str] = []

        async def redirect(url: str) -> None:
            state = (parse_qs(urlsplit(url).query).get("state") or [""])[0]
            if not state:
                raise OAuthFlowError("the authorization URL carries no state")
            self._pending[state] = _Pending(server_id, time.monotonic(), on_auth_url)
            state_of_flow[:] = [state]
            on_auth_url(url)

        async def callback() -> AuthorizationCodeResult:
            state = state_of_flow[0]
            pending = self._pending[state]
            try:
                with anyio.fail_after(self.auth_timeout):
                    await pending.arrived.wait()
            except TimeoutError:
                raise OAuthFlowError(f"nobody finished signing in within {self.auth_timeout:g} s") from None
            finally:
                self._pending.pop(state, None)
                on_auth_url(None)
            if pending.result is None:
                raise OAuthFlowError(f"the authorization server refused: {pending.error}")
            return pending.result

        metadata = OAuthClientMetadata(client_name=f"think {__version__}", redirect_uris=[callback_url],
                                       grant_types=["authorization_code", "refresh_token"],
                                       response_types=["code"])
        provider = OAuthClientProvider(server_url=server_url, client_metadata=metadata,
                                       storage=_Storage(self.store, server_id), redirect_handler=redirect,
                                       callback_handler=callback)
        _, expires_at = self.store.tokens(server_id)
        provider.context.token_expiry_time = expires_at  # the SDK keeps it in memory only: refresh after a restart
        return provider

    def callback(self, params: dict[str, str]) -> Callback:
        """Hand a callback's `code` (or `error`) to the flow its `state` names, if one waits."""
        state = params.get("state") or ""
        pending = self._pending.get(state) if state else None
        if pending is None or time.monotonic() - pending.started > self.auth_timeout:
            return Callback(False, None, "This sign-in link is not valid or has expired (unknown state). "
                            "Nothing was stored. Start the sign-in again from the agent's newest link.")
        del self._pending[state]  # single use
        pending.on_auth_url(None)  # the connection is no longer waiting for a person: `connecting`
        if params.get("error"):
            pending.error = " ".join(filter(None, (params.get("error"), params.get("error_description"))))[:300]
            pending.arrived.set()
            return Callback(False, pending.server_id, f"The authorization server refused: {pending.error}")
        if not params.get("code"):
            pending.error = "the callback carried no code"
            pending.arrived.set()
            return Callback(False, pending.server_id, "The callback carried no authorization code.")
        pending.result = AuthorizationCodeResult(code=params["code"], state=state, iss=params.get("iss") or None)
        pending.arrived.set()
        return Callback(True, pending.server_id, "Signed in.")

    def forget(self, server_id: str) -> None:
        """A removed server: its waiting flows end (their callbacks are refused)."""
        for state, pending in list(self._pending.items()):
            if pending.server_id == server_id:
                del self._pending[state]
                pending.error = "the server was removed"
                pending.arrived.set()
