"""OAuth 2.1 against a real OAuth-protected MCP server (`tests.mcp.oauth_server`, the SDK's auth
server pieces in a subprocess), driven over HTTP through a real `think serve` process: add the
server from a WebSocket `@callable`, follow `auth_url` to the authorization server, which sends
the browser back to the agent's `/callback`; the server becomes ready and a turn calls its
protected tool. Restarts reuse the stored tokens, an expired one is refreshed, a wrong or
replayed `state` is refused, and a process killed in the middle of the sign-in starts over."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlsplit

import anyio
import httpx
import orjson
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from tests.mcp.conftest import OAuthServer
from tests.mcp.helpers import until
from tests.mcp.test_client_tools import Mcp
from tests.submissions.server_process import ServerProcess, spawn_think_serve
from think.net.policy import UrlPolicy
from think.runtime.embedded import EmbeddedRuntime

TARGET = "tests.mcp.oauth_agent:Secretive"
AGENT = "/agents/secretive/alice"


class Socket:
    """One WebSocket to the agent: RPC calls, and the `cf_agent_mcp_servers` frames seen so far."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.mcp_frames: list[dict[str, Any]] = []
        self._ids = 0

    async def _next(self) -> dict[str, Any]:
        frame: dict[str, Any] = orjson.loads(await self.ws.recv())
        if frame.get("type") == "cf_agent_mcp_servers":
            self.mcp_frames.append(frame["mcp"])
        return frame

    async def call(self, method: str, *args: Any, within: float = 60) -> Any:
        self._ids += 1
        rid = str(self._ids)
        await self.ws.send(orjson.dumps({"type": "rpc", "id": rid, "method": method, "args": list(args)}).decode())
        with anyio.fail_after(within):
            while True:
                frame = await self._next()
                if frame.get("type") == "rpc" and frame.get("id") == rid:
                    assert frame["success"], frame
                    return frame.get("result")

    async def mcp_until(self, condition: Callable[[dict[str, Any]], bool], *, within: float = 60) -> dict[str, Any]:
        """The first `cf_agent_mcp_servers` payload (seen already or arriving) that satisfies `condition`."""
        with anyio.fail_after(within):
            seen = 0
            while True:
                for payload in self.mcp_frames[seen:]:
                    if condition(payload):
                        return payload
                seen = len(self.mcp_frames)
                await self._next()


@asynccontextmanager
async def socket(server: ServerProcess) -> AsyncIterator[Socket]:
    async with ws_connect(server.ws + AGENT, max_size=None) as ws:
        yield Socket(ws)


def served(data_dir: Path, port: int | None = None) -> ServerProcess:
    """`think serve` of the test agent; `port`: the address of a killed one (its callback URL)."""
    server = spawn_think_serve([TARGET, "--data-dir", str(data_dir)], {}, port=port)
    server.wait_ready("/_think/health")
    return server


def only(payload: dict[str, Any]) -> dict[str, Any]:
    """The one server of a `cf_agent_mcp_servers` payload (`{}` before it is added)."""
    entries = list(payload["servers"].values())
    assert len(entries) <= 1, entries
    return dict(entries[0]) if entries else {}


async def follow_authorize(auth_url: str) -> str:
    """The browser at the authorization server (which approves at once): the callback URL it is sent to."""
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.get(auth_url)
    assert response.status_code in (302, 303, 307), response.text
    return str(response.headers["location"])


async def get(url: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=60) as http:
        return await http.get(url)


def agent_db(data_dir: Path) -> Path:
    return data_dir / "secretive" / "alice.db"


async def test_the_whole_sign_in_over_http_then_restarts_reuse_and_refresh_the_tokens(
        data_dir: Path, oauth_server: OAuthServer) -> None:
    server = served(data_dir)
    try:
        async with socket(server) as ws:
            added = await ws.call("add_server", oauth_server.url)
            assert added["state"] == "authenticating", added
            auth_url = added["auth_url"]
            assert auth_url.startswith(f"{oauth_server.base}/authorize?"), auth_url
            query = parse_qs(urlsplit(auth_url).query)
            assert query["code_challenge_method"] == ["S256"] and query["code_challenge"]  # PKCE
            assert oauth_server.stats()["registrations"] == 1  # dynamic client registration
            frame = await ws.mcp_until(lambda p: only(p).get("state") == "authenticating")
            assert only(frame)["auth_url"] == auth_url and only(frame)["server_url"] == oauth_server.url

            callback = await follow_authorize(auth_url)
            assert callback.startswith(f"{server.http}{AGENT}/callback?"), callback

            forged = callback.replace("state=", "state=forged")
            refused = await get(forged)
            assert refused.status_code == 400 and "not valid or has expired" in refused.text, refused.text
            assert refused.headers["content-type"].startswith("text/html")
            assert not await ws.call("has_tokens") and oauth_server.stats()["code_exchanges"] == 0

            page = await get(callback)
            assert page.status_code == 200 and "is connected (1 tools)" in page.text, page.text
            await ws.mcp_until(lambda p: only(p).get("state") == "ready" and only(p).get("auth_url") is None
                               and [t["name"] for t in p["tools"]] == ["secret"])
            assert await ws.call("has_tokens")
            replayed = await get(callback)  # the same state again: single use
            assert replayed.status_code == 400 and oauth_server.stats()["code_exchanges"] == 1

            answer = await ws.call("ask", 'use vault_secret {"word": "sesame"}')
            assert answer == {"status": "completed", "state": "output-available",
                              "output": "the secret of sesame is 42", "error": None}
    finally:
        server.kill()

    # A new process: the stored tokens are used as they are, nobody signs in again.
    server = served(data_dir, server.port)
    try:
        async with socket(server) as ws:
            answer = await ws.call("ask", 'use vault_secret {"word": "again"}')
            assert answer["output"] == "the secret of again is 42", answer
    finally:
        server.kill()
    assert {k: oauth_server.stats()[k] for k in ("registrations", "authorizations", "refreshes")} == {
        "registrations": 1, "authorizations": 1, "refreshes": 0}

    # The access token's lifetime is over (for the server, and for the agent's stored expiry):
    # the next process refreshes it with the refresh token, again without a sign-in.
    oauth_server.expire_tokens()
    with sqlite3.connect(agent_db(data_dir)) as db:
        db.execute("UPDATE think_mcp_oauth SET expires_at = ?", (time.time() - 60,))
    server = served(data_dir, server.port)
    try:
        async with socket(server) as ws:
            answer = await ws.call("ask", 'use vault_secret {"word": "fresh"}')
            assert answer["output"] == "the secret of fresh is 42", answer
            [entry] = await ws.call("servers")
            assert entry["state"] == "ready" and entry["auth_url"] is None
    finally:
        server.kill()
    stats = oauth_server.stats()
    assert (stats["refreshes"], stats["authorizations"], stats["registrations"]) == (1, 1, 1), stats


async def test_a_process_killed_in_the_middle_of_the_sign_in_starts_a_fresh_one(
        data_dir: Path, oauth_server: OAuthServer) -> None:
    server = served(data_dir)
    try:
        async with socket(server) as ws:
            first = await ws.call("add_server", oauth_server.url)
            assert first["state"] == "authenticating"
        old_callback = await follow_authorize(first["auth_url"])
    finally:
        server.kill()  # SIGKILL while the flow waits for the browser: its PKCE verifier is gone

    server = served(data_dir, server.port)
    try:
        async with socket(server) as ws:
            payload = await ws.mcp_until(lambda p: only(p).get("state") == "authenticating")
            second_url = only(payload)["auth_url"]
            assert second_url and second_url != first["auth_url"]
            # The browser comes back from the old link (to this new process): refused, nothing stored.
            stale = await get(old_callback)
            assert stale.status_code == 400 and "expired" in stale.text
            assert not await ws.call("has_tokens")
            page = await get(await follow_authorize(second_url))
            assert page.status_code == 200, page.text
            answer = await ws.call("ask", 'use vault_secret {"word": "second"}')
            assert answer["output"] == "the secret of second is 42"
    finally:
        server.kill()
    stats = oauth_server.stats()
    assert stats["registrations"] == 1 and stats["code_exchanges"] == 1, stats  # the registration was kept


async def test_without_a_callback_url_a_protected_server_fails_with_a_clear_error(
        data_dir: Path, oauth_server: OAuthServer) -> None:
    runtime = EmbeddedRuntime(data_dir)
    try:
        async with runtime.lease(Mcp, "no-callback") as agent:  # not in a request: no agent URL known
            added = await agent.add_mcp_server("vault", oauth_server.url, transport="streamable-http")
            assert added["state"] == "failed" and added["auth_url"] is None
            assert "requires OAuth" in added["error"] and "callback_host" in added["error"], added["error"]
    finally:
        await runtime.close()


class MetadataRefused(Mcp):
    mcp_url_policy = UrlPolicy(["http://127.0.0.1:*/mcp"], allow_private_networks=["127.0.0.1/32"])


async def test_the_sign_in_requests_pass_the_same_url_policy(data_dir: Path, oauth_server: OAuthServer) -> None:
    """The policy admits the server URL but not the OAuth metadata: the flow stops at discovery."""
    runtime = EmbeddedRuntime(data_dir)
    try:
        async with runtime.lease(MetadataRefused, "guarded") as agent:
            added = await agent.add_mcp_server("vault", oauth_server.url, transport="streamable-http",
                                               callback_host="http://127.0.0.1:9")
            assert added["state"] == "failed" and added["auth_url"] is None, added
            assert "well-known" in added["error"] or "policy" in added["error"], added["error"]
            assert oauth_server.stats()["registrations"] == 0
    finally:
        await runtime.close()


async def test_a_token_refused_while_connected_asks_for_a_new_sign_in_and_the_call_goes_through(
        data_dir: Path, oauth_server: OAuthServer) -> None:
    runtime = EmbeddedRuntime(data_dir)
    try:
        async with runtime.lease(Mcp, "revoked") as agent:
            added = await agent.add_mcp_server("vault", oauth_server.url, transport="streamable-http",
                                               callback_host="http://127.0.0.1:9")
            assert added["state"] == "authenticating"
            callback = await follow_authorize(added["auth_url"])
            assert (await agent.mcp.finish_auth(dict(parse_qsl(urlsplit(callback).query)))).ok
            oauth_server.expire_tokens()  # the server stops accepting the token while we are connected
            async with anyio.create_task_group() as tasks:
                answers: list[Any] = []

                async def call() -> None:
                    answers.append(await agent.call_mcp_tool(added["id"], "secret", {"word": "late"}))

                tasks.start_soon(call)
                await until(agent, lambda: agent.mcp_servers()[0]["state"] == "authenticating",
                            what="the new sign-in")
                second = agent.mcp_servers()[0]["auth_url"]
                assert second and second != added["auth_url"]
                outcome = await agent.mcp.finish_auth(dict(parse_qsl(urlsplit(await follow_authorize(second)).query)))
                assert outcome.ok, outcome
            assert answers[0].content[0].text == "the secret of late is 42"
            assert agent.mcp_servers()[0]["state"] == "ready"
    finally:
        await runtime.close()
