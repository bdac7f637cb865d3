"""`Browser`: the Chromium the tools drive (launched and owned, or attached to at `cdp_url`), and
`Page`: one isolated browser context with one page in it.

A `Browser` keeps one CDP connection per event loop. When the connection is gone — the browser
crashed or was killed — the next `link()` launches a new one (an owned browser) or reconnects
(`cdp_url`); pages of the old one are lost (`Page.lost`). Every page lives in its own browser
context (`Target.createBrowserContext`, disposed when our connection detaches), whose proxy is the
dead proxy, so even an attached browser we did not launch fails closed. Its page is created
blank (`about:blank` loads nothing) and the guard (`think.tools.browser.guard`) is armed on it
before the first navigation.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
import httpx

from think.net import UrlPolicy
from think.tools.browser.cdp import BrowserClosed, CdpConnection, CdpError
from think.tools.browser.guard import Guard, Refusal
from think.tools.browser.process import DEAD_PROXY, PROXY_BYPASS, Chromium, start_chromium

VIEWPORT = {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}


class NavigationError(Exception):
    """A navigation that did not load: `code` is `disallowed_url`, `disallowed_redirect`,
    `timeout` or `navigation_failed`."""

    def __init__(self, code: str, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.url = url


@dataclass
class Link:
    """One connection to the browser, in one event loop, with its guard."""

    connection: CdpConnection
    guard: Guard
    loop: asyncio.AbstractEventLoop
    generation: int


class Browser:
    """See the module docs. `timeout` bounds each navigation and command (seconds)."""

    def __init__(self, policy: UrlPolicy, *, cdp_url: str | None = None, executable: str | None = None,
                 timeout: float = 30.0, launch_timeout: float = 60.0, max_bytes: int = 20_000_000) -> None:
        self.policy = policy
        self.cdp_url = cdp_url
        self.executable = executable
        self.timeout = timeout
        self.launch_timeout = launch_timeout
        self.max_bytes = max_bytes
        self.chromium: Chromium | None = None
        self.launches = 0
        self._link: Link | None = None
        self._generation = 0
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self._protocol: dict[str, Any] | None = None

    @property
    def pid(self) -> int | None:
        return self.chromium.pid if self.chromium is not None and self.chromium.alive() else None

    def _loop_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    async def link(self) -> Link:
        """The live connection of this loop, (re)launching or reconnecting as needed."""
        loop = asyncio.get_running_loop()
        current = self._link
        if current is not None and current.loop is loop and not current.connection.is_closed:
            return current
        async with self._loop_lock():
            current = self._link
            if current is not None and current.loop is loop and not current.connection.is_closed:
                return current
            if current is not None and current.loop is loop:
                await current.guard.aclose()
                if self.chromium is not None:  # our browser dropped the connection: it died or is dying
                    dead, self.chromium = self.chromium, None
                    await anyio.to_thread.run_sync(dead.kill)
            self._link = None
            return await self._connect(loop)

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> Link:
        url = await self._websocket_url()
        connection = await CdpConnection.connect(url)
        self._generation += 1
        link = Link(connection, Guard(self.policy, max_bytes=self.max_bytes, timeout=self.timeout), loop,
                    self._generation)
        self._link = link
        return link

    async def _websocket_url(self) -> str:
        if self.cdp_url is not None:
            if self.cdp_url.startswith(("ws://", "wss://")):
                return self.cdp_url
            async with httpx.AsyncClient(trust_env=False, timeout=self.timeout) as client:
                answer = await client.get(self.cdp_url.rstrip("/") + "/json/version")
                return str(answer.json()["webSocketDebuggerUrl"])
        if self.chromium is not None and self.chromium.alive():
            return self.chromium.websocket_url
        if self.chromium is not None:
            dead, self.chromium = self.chromium, None
            await anyio.to_thread.run_sync(dead.kill)
        # Started from this (the loop's) thread, which lives as long as the browser should; the
        # wait for DevTools happens in a worker thread, so the loop goes on meanwhile.
        chromium = self.chromium = start_chromium(self.executable)
        self.launches += 1
        await anyio.to_thread.run_sync(chromium.wait_ready, self.launch_timeout)
        return chromium.websocket_url

    def http_url(self) -> str:
        if self.cdp_url is not None:
            base = self.cdp_url.split("/devtools/", 1)[0]
            return base.replace("ws://", "http://", 1).replace("wss://", "https://", 1).rstrip("/")
        if self.chromium is None:
            raise BrowserClosed("the browser is not running")
        return self.chromium.http_url

    async def protocol(self) -> dict[str, Any]:
        """The running browser's protocol description (`/json/protocol`), read once."""
        if self._protocol is None:
            await self.link()
            async with httpx.AsyncClient(trust_env=False, timeout=self.timeout) as client:
                answer = await client.get(self.http_url() + "/json/protocol")
                answer.raise_for_status()
                self._protocol = answer.json()
        return self._protocol

    async def new_page(self, key: str | None = None) -> Page:
        """A fresh browser context with one blank page, armed and ready."""
        link = await self.link()
        connection = link.connection
        key = key or secrets.token_hex(8)
        created = await connection.send("Target.createBrowserContext", {
            "disposeOnDetach": True, "proxyServer": DEAD_PROXY, "proxyBypassList": PROXY_BYPASS}, timeout=self.timeout)
        context_id = str(created["browserContextId"])
        try:
            target = await connection.send("Target.createTarget", {
                "url": "about:blank", "browserContextId": context_id}, timeout=self.timeout)
            target_id = str(target["targetId"])
            session_id = await link.guard.open(connection, target_id, key)
        except BaseException:
            with contextlib.suppress(CdpError, ConnectionError, TimeoutError):
                await connection.send("Target.disposeBrowserContext", {"browserContextId": context_id}, timeout=5)
            link.guard.forget(key, connection)
            raise
        page = Page(self, link, key, context_id, target_id, session_id)
        await page.send("Page.enable")
        await page.send("Emulation.setDeviceMetricsOverride", VIEWPORT)
        return page

    async def close(self) -> None:
        """Close the connection and kill an owned browser."""
        link, self._link = self._link, None
        if link is not None and link.loop is asyncio.get_running_loop():
            await link.connection.close()
            await link.guard.aclose()
        if self.chromium is not None:
            owned, self.chromium = self.chromium, None
            await anyio.to_thread.run_sync(owned.kill)

    def kill(self) -> None:
        if self.chromium is not None:
            self.chromium.kill()
            self.chromium = None


@dataclass(eq=False)
class Page:
    """One browser context with its page (see the module docs)."""

    browser: Browser
    link: Link
    key: str
    context_id: str
    target_id: str
    session_id: str
    last_used: float = field(default_factory=time.monotonic)
    closed: bool = False

    @property
    def lost(self) -> bool:
        """The browser connection this page lived on is gone (the browser died or restarted)."""
        return self.link.connection.is_closed or self.browser._link is not self.link

    @property
    def connection(self) -> CdpConnection:
        return self.link.connection

    def refusals(self) -> list[Refusal]:
        return list(self.link.guard.refused.get(self.key, ()))

    def owns_session(self, session_id: str) -> bool:
        return session_id == self.session_id or self.link.guard.owner(session_id) == self.key

    async def send(self, method: str, params: dict[str, Any] | None = None, *, session_id: str | None = None,
                   timeout: float | None = None) -> dict[str, Any]:  # noqa: ASYNC109
        """A command to the page's session (`session_id`: another of its sessions; `""`: the browser)."""
        self.last_used = time.monotonic()
        target = self.session_id if session_id is None else (session_id or None)
        return await self.connection.send(method, params, session_id=target,
                                          timeout=timeout or self.browser.timeout)

    async def evaluate(self, expression: str, *, timeout: float | None = None) -> Any:  # noqa: ASYNC109
        """The JSON value of a JavaScript expression (promises awaited); page errors raise."""
        answer = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                      "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            text = (details.get("exception") or {}).get("description") or details.get("text") or "error"
            raise CdpError("Runtime.evaluate", 0, str(text)[:2000])
        return (answer.get("result") or {}).get("value")

    async def navigate(self, url: str) -> dict[str, Any]:
        """Load `url` and wait for its load event: `{url, status, title}`; raises `NavigationError`."""
        decision = self.browser.policy.check(url)
        if not decision:
            raise NavigationError("disallowed_url", decision.reason, url=url)
        before = len(self.refusals())
        loaded = asyncio.get_running_loop().create_future()

        def done(_params: dict[str, Any], _session: str | None) -> None:
            if not loaded.done():
                loaded.set_result(None)

        remove = self.connection.on("Page.loadEventFired", done, session_id=self.session_id)
        try:
            async with asyncio.timeout(self.browser.timeout):
                answer = await self.send("Page.navigate", {"url": str(decision.url)})
                error = answer.get("errorText")
                if error:
                    raise self._failed(url, str(error), before)
                await loaded
            # What the page's scripts fetch after the load event, and render from: wait it out.
            await self.link.guard.quiet(self.key, limit=min(5.0, self.browser.timeout))
        except TimeoutError:
            with contextlib.suppress(CdpError, ConnectionError, TimeoutError):
                await self.send("Page.stopLoading", timeout=5)
            raise NavigationError("timeout", f"The page did not load within {self.browser.timeout:g} s.",
                                  url=url) from None
        finally:
            remove()
        state = await self.evaluate("({url: location.href, title: document.title, status: "
                                    "(performance.getEntriesByType('navigation')[0] || {}).responseStatus || null})")
        return dict(state or {})

    def _failed(self, url: str, error: str, before: int) -> NavigationError:
        refused = self.refusals()[before:]
        if refused:
            first = refused[0]
            code = "disallowed_url" if first.url.rstrip("/") == url.rstrip("/") else "disallowed_redirect"
            return NavigationError(code, f"Refused by the URL policy: {first.reason}", url=first.url)
        return NavigationError("navigation_failed", f"The page did not load: {error}", url=url)

    async def close(self) -> None:
        """Dispose of the page's browser context (nothing to do when the browser is gone)."""
        if self.closed:
            return
        self.closed = True
        self.link.guard.forget(self.key, self.connection)
        if self.lost:
            return
        with contextlib.suppress(CdpError, ConnectionError, TimeoutError):
            await self.connection.send("Target.disposeBrowserContext", {"browserContextId": self.context_id},
                                       timeout=10)
