"""A real OAuth-protected MCP server built with the SDK's auth server pieces (run as a subprocess).

    python -m tests.mcp.oauth_server PORT

Streamable HTTP at `/mcp`, which answers 401 without a bearer token; the SDK's authorization
server routes (`/.well-known/…` metadata, `/register`, `/authorize`, `/token`) backed by the
in-memory provider below, which approves every authorization request at once (no login page:
`GET /authorize` redirects straight to the client's `redirect_uri` with a code). Test-only
routes: `GET /test/stats` (what the server was asked: registrations, authorizations, code and
refresh exchanges) and `POST /test/expire` (every access token issued so far stops working).
Tool: `secret` (needs a valid token, like every MCP request here).
"""

from __future__ import annotations

import secrets
import sys
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

TOKEN_SECONDS = 3600


class AutoApprove(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """An `OAuthAuthorizationServerProvider` keeping everything in memory and approving every request."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats = {"registrations": 0, "authorizations": 0, "code_exchanges": 0, "refreshes": 0,
                      "refused_tokens": 0}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.stats["registrations"] += 1

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        self.stats["authorizations"] += 1
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        found = self.codes.get(authorization_code)
        return found if found is not None and found.client_id == client.client_id else None

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + TOKEN_SECONDS, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=TOKEN_SECONDS,
                          refresh_token=refresh, scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "the code was used already")
        self.stats["code_exchanges"] += 1
        assert client.client_id is not None
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated: each refresh token works once
        self.stats["refreshes"] += 1
        assert client.client_id is not None
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            self.stats["refused_tokens"] += 1
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(getattr(token, "token", ""), None)
        self.refresh.pop(getattr(token, "token", ""), None)


def build(port: int) -> tuple[MCPServer, AutoApprove]:
    provider = AutoApprove()
    base = f"http://127.0.0.1:{port}"
    server = MCPServer("oauth-demo", instructions="An OAuth-protected demo server.", auth_server_provider=provider,
                       auth=AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp",
                                         validate_token_resource=False,
                                         client_registration_options=ClientRegistrationOptions(enabled=True)))

    @server.tool()
    def secret(word: str) -> str:
        """Answer with the protected secret (needs a valid token)."""
        return f"the secret of {word} is 42"

    return server, provider


def main() -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount, Route

    port = int(sys.argv[1])
    server, provider = build(port)

    async def stats(request: Request) -> Response:
        return JSONResponse(provider.stats)

    async def expire(request: Request) -> Response:
        for token in provider.access.values():
            token.expires_at = 0
        return JSONResponse({"expired": len(provider.access)})

    http = server.streamable_http_app()
    routes = [Route("/test/stats", stats, methods=["GET"]), Route("/test/expire", expire, methods=["POST"]),
              Mount("/", app=http)]
    app = Starlette(routes=routes, lifespan=http.router.lifespan_context)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
