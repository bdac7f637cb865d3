"""Every request a page makes, answered through the URL policy (CDP `Fetch` interception).

The browser never reaches the network itself: its own traffic goes to a proxy that does not
exist (`think.tools.browser.process.DEAD_PROXY`, set per browser context too). Each page gets
`Fetch.enable` for every URL while it is still blank, and auto-attaches (paused at start) to its
children — frames in other processes, workers — which are armed the same way before they run.
A paused request is

* refused (`Fetch.failRequest`, `BlockedByClient`) when `UrlPolicy.check` refuses its URL —
  scheme (file:, chrome:, …), credentials, blocked hosts, the allowlist — and recorded in
  `Guard.refused` for the session;
* otherwise fetched by us with the policy's own HTTP client (`UrlPolicy.client()`: addresses
  checked at connect time, connection pinned to the checked address, so DNS rebinding does not
  help) and handed to the page with `Fetch.fulfillRequest`. Redirects are not followed by us:
  the browser follows the 3xx it is given, and the next hop is a new paused request, checked
  again. Bodies are capped at `max_bytes`.

It also counts each page's requests in flight, so a navigation can wait until the page has gone
quiet (`quiet`: no request for `NETWORK_IDLE` seconds) before it is read.

Anything not intercepted (a WebSocket, a popup window, a target we failed to arm) goes to the
dead proxy and fails: the guard fails closed.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from think.net import BlockedRequest, UrlPolicy, read_capped
from think.tools.browser.cdp import CdpConnection, CdpError

log = logging.getLogger("think.browser")

_DROP_REQUEST = frozenset({"host", "content-length", "connection", "keep-alive", "accept-encoding", "upgrade",
                           "proxy-connection", "proxy-authorization", "te", "trailer", "transfer-encoding"})
_DROP_RESPONSE = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"})
NETWORK_IDLE = 0.5
"""Seconds without a request in flight after which a loaded page counts as settled."""
AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}


@dataclass(frozen=True)
class Refusal:
    url: str
    rule: str
    reason: str


@dataclass
class Guard:
    """The interception of one browser connection (see the module docs). `owner(session_id)`
    says which page a session belongs to, so refusals are recorded for that page."""

    policy: UrlPolicy
    max_bytes: int = 20_000_000
    timeout: float = 30.0
    refused: dict[str, list[Refusal]] = field(default_factory=dict)
    """Refused requests by page key (see `attach`)."""
    requests: int = 0
    _client: httpx.AsyncClient | None = None
    _owners: dict[str, str] = field(default_factory=dict)
    _in_flight: dict[str, int] = field(default_factory=dict)
    _last_seen: dict[str, float] = field(default_factory=dict)

    async def quiet(self, key: str, *, idle: float = NETWORK_IDLE, limit: float = 5.0) -> bool:
        """Wait until the page `key` has had no request in flight for `idle` seconds (what a page's
        scripts fetch after its load event, and render from), at most `limit` seconds; False if
        it never went quiet (a page that polls)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if not self._in_flight.get(key) and time.monotonic() - self._last_seen.get(key, 0.0) >= idle:
                return True
            await asyncio.sleep(0.05)  # several counters and no single event that covers them: poll
        return False

    def _note(self, key: str | None, delta: int) -> None:
        if key is not None:
            self._in_flight[key] = self._in_flight.get(key, 0) + delta
            self._last_seen[key] = time.monotonic()

    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = self.policy.client(timeout=self.timeout, follow_redirects=False, keep_cookies=False)
            del self._client.headers["accept"]
            del self._client.headers["user-agent"]
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def open(self, connection: CdpConnection, target_id: str, key: str) -> str:
        """Attach to a target of the page `key` (not loading anything yet) and arm it; its session id."""
        answer = await connection.send("Target.attachToTarget", {"targetId": target_id, "flatten": True},
                                       timeout=self.timeout)
        session_id = str(answer["sessionId"])
        self.adopt(session_id, key)
        await self.arm(connection, session_id)
        return session_id

    def adopt(self, session_id: str, key: str) -> None:
        """A session opened on one of the page `key`'s targets belongs to that page."""
        self._owners[session_id] = key

    def owner(self, session_id: str | None) -> str | None:
        return self._owners.get(session_id or "")

    async def _attached(self, connection: CdpConnection, params: dict[str, Any], parent: str | None) -> None:
        """A child of an armed target (a frame in its own process, a worker), paused at start."""
        session_id = str(params.get("sessionId", ""))
        key = self._owners.get(parent or "")
        if key is not None:
            self.adopt(session_id, key)
        try:
            await self.arm(connection, session_id)
        finally:
            if params.get("waitingForDebugger"):
                try:
                    await connection.send("Runtime.runIfWaitingForDebugger", session_id=session_id)
                except (CdpError, ConnectionError):
                    pass

    async def arm(self, connection: CdpConnection, session_id: str) -> None:
        """Intercept every request of `session_id` and auto-attach (paused) to its children."""
        connection.on("Fetch.requestPaused", lambda p, s: self._paused(connection, p, s), session_id=session_id)
        connection.on("Target.attachedToTarget", lambda p, s: self._attached(connection, p, s), session_id=session_id)
        try:
            await connection.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]},
                                  session_id=session_id)
        except CdpError as exc:  # a target without the Fetch domain: its traffic meets the dead proxy
            log.debug("no request interception for %s: %s", session_id, exc)
        try:
            await connection.send("Target.setAutoAttach", AUTO_ATTACH, session_id=session_id)
        except CdpError:
            pass

    async def _paused(self, connection: CdpConnection, params: dict[str, Any], session_id: str | None) -> None:
        request = params.get("request") or {}
        url = str(request.get("url", ""))
        request_id = params["requestId"]
        decision = self.policy.check(url)
        if not decision:
            self._refuse(session_id, url, decision.rule, decision.reason)
            await self._fail(connection, request_id, session_id, "BlockedByClient")
            return
        self.requests += 1
        key = self.owner(session_id)
        self._note(key, +1)
        try:
            await self._answer(connection, request, request_id, session_id, url)
        finally:
            self._note(key, -1)

    async def _answer(self, connection: CdpConnection, request: dict[str, Any], request_id: str,
                      session_id: str | None, url: str) -> None:
        try:
            reply = await self._fetch(request)
        except BlockedRequest as exc:
            self._refuse(session_id, url, exc.decision.rule, str(exc))
            await self._fail(connection, request_id, session_id, "BlockedByClient")
            return
        except httpx.TimeoutException:
            await self._fail(connection, request_id, session_id, "TimedOut")
            return
        except (httpx.HTTPError, OSError) as exc:
            log.debug("browser request %s failed: %s", url, exc)
            await self._fail(connection, request_id, session_id, "ConnectionFailed")
            return
        status, headers, body = reply
        try:
            await connection.send("Fetch.fulfillRequest", {
                "requestId": request_id, "responseCode": status, "responseHeaders": headers,
                "body": base64.b64encode(body).decode("ascii")}, session_id=session_id)
        except (CdpError, ConnectionError):  # the page went away meanwhile
            pass

    async def _fetch(self, request: dict[str, Any]) -> tuple[int, list[dict[str, str]], bytes]:
        headers = {k: v for k, v in (request.get("headers") or {}).items() if k.lower() not in _DROP_REQUEST}
        body: bytes | None = None
        entries = request.get("postDataEntries")
        if entries:
            body = b"".join(base64.b64decode(e.get("bytes", "")) for e in entries)
        elif request.get("postData") is not None:
            body = str(request["postData"]).encode()
        client = self.client()
        async with client.stream(str(request.get("method", "GET")), str(request["url"]), headers=headers,
                                 content=body) as response:
            content, _ = await read_capped(response, self.max_bytes)
            kept = [{"name": k, "value": v} for k, v in response.headers.multi_items()
                    if k.lower() not in _DROP_RESPONSE]
            return response.status_code, kept, content

    def _refuse(self, session_id: str | None, url: str, rule: str, reason: str) -> None:
        key = self._owners.get(session_id or "")
        log.info("browser request refused: %s (%s)", url.split("?", 1)[0][:200], rule)
        if key is not None:
            self.refused.setdefault(key, []).append(Refusal(url, rule, reason))

    async def _fail(self, connection: CdpConnection, request_id: str, session_id: str | None, reason: str) -> None:
        try:
            await connection.send("Fetch.failRequest", {"requestId": request_id, "errorReason": reason},
                                  session_id=session_id)
        except (CdpError, ConnectionError):
            pass

    def forget(self, key: str, connection: CdpConnection | None = None) -> None:
        """Drop what is recorded for the page `key` (it was closed), and its sessions' handlers."""
        self.refused.pop(key, None)
        self._in_flight.pop(key, None)
        self._last_seen.pop(key, None)
        for name in [n for n, k in self._owners.items() if k == key]:
            del self._owners[name]
            if connection is not None:
                connection.forget_session(name)

