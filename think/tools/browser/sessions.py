"""Which page a tool call runs in: one-shot, dynamic, or reused by key.

* `"one-shot"`: a fresh browser context per call, disposed of when the call ends (also when it
  fails or is cancelled).
* `"dynamic"`: the same, unless the model asks to keep it (`keep: true`): the result then carries
  a `session_id` the model passes to later calls; `close: true` ends it.
* `{"reuse": key}`: every call of an agent runs in the one page kept under `key` (cookies and
  state persist between calls), recreated when it was swept or lost.

Kept pages belong to one agent instance (`owner`): another agent cannot use or guess into them.
`sweep(max_idle)` disposes of kept pages idle longer than that (a scheduled task can call it).
A page whose browser died is lost: a reused one is recreated, a dynamic one is reported gone.
Calls on one kept page are serialized.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from think.errors import ConfigurationError
from think.tools.browser.browser import Browser, Page
from think.tools.browser.cdp import BrowserClosed

SessionMode: TypeAlias = Literal["one-shot", "dynamic"] | Mapping[str, str]
DEFAULT_MAX_IDLE = 300.0
"""Seconds a kept page may stay unused before `sweep()` closes it."""


class SessionGone(LookupError):
    """The model named a session that does not exist (closed, swept, or lost in a browser restart)."""


@dataclass(eq=False)
class Kept:
    page: Page
    owner: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def check_mode(session: Any) -> SessionMode:
    if session in ("one-shot", "dynamic"):
        return session  # type: ignore[no-any-return]
    if isinstance(session, Mapping) and set(session) == {"reuse"} and str(session["reuse"]).strip():
        return {"reuse": str(session["reuse"])}
    raise ConfigurationError(f'session must be "one-shot", "dynamic" or {{"reuse": key}}, not {session!r}')


class Sessions:
    """The pages of one set of browser tools (see the module docs)."""

    def __init__(self, browser: Browser, mode: SessionMode, *, max_idle: float = DEFAULT_MAX_IDLE) -> None:
        self.browser = browser
        self.mode = check_mode(mode)
        self.max_idle = max_idle
        self.kept: dict[str, Kept] = {}

    @property
    def dynamic(self) -> bool:
        return self.mode == "dynamic"

    @property
    def reuse_key(self) -> str | None:
        return self.mode["reuse"] if isinstance(self.mode, Mapping) else None

    @asynccontextmanager
    async def page(self, owner: str, *, session_id: str | None = None, keep: bool = False,
                   close: bool = False) -> AsyncIterator[tuple[Page, str | None]]:
        """The page for one call and the session id to report (None: one-shot)."""
        if self.reuse_key is not None:
            name = f"reuse:{owner}:{self.reuse_key}"
            async with self._kept(name, owner, create=True) as page:
                yield page, None
            return
        if self.dynamic and session_id:
            async with self._kept(session_id, owner, create=False) as page:
                yield page, (None if close else session_id)
            if close:
                await self.close_session(session_id)
            return
        page = await self.browser.new_page()
        if self.dynamic and keep:
            new_id = "s-" + secrets.token_urlsafe(12)
            self.kept[new_id] = Kept(page, owner)
            async with self._kept(new_id, owner, create=False) as kept_page:
                yield kept_page, new_id
            return
        try:
            yield page, None
        finally:
            await asyncio.shield(page.close())

    @asynccontextmanager
    async def _kept(self, name: str, owner: str, *, create: bool) -> AsyncIterator[Page]:
        kept = self.kept.get(name)
        if kept is not None and kept.owner != owner:
            kept = None  # another agent's session is not there for this one
        if kept is None and not create:
            raise SessionGone(f"no browser session {name!r}: it was closed, swept after being idle, or lost "
                              "when the browser restarted; start a new one")
        if kept is None:
            kept = self.kept[name] = Kept(await self.browser.new_page(), owner)
        async with kept.lock:
            if kept.page.lost or kept.page.closed:
                if not create:
                    self.kept.pop(name, None)
                    raise SessionGone(f"browser session {name!r} was lost when the browser restarted")
                kept.page = await self.browser.new_page()
            kept.page.last_used = time.monotonic()
            try:
                yield kept.page
            finally:
                kept.page.last_used = time.monotonic()

    async def close_session(self, name: str) -> bool:
        kept = self.kept.pop(name, None)
        if kept is None:
            return False
        await kept.page.close()
        return True

    async def sweep(self, max_idle: float | None = None) -> list[str]:
        """Close kept pages unused for more than `max_idle` seconds (default: the tools'
        `max_idle`) and pages the browser lost; returns the names closed."""
        limit = self.max_idle if max_idle is None else max_idle
        now = time.monotonic()
        stale = [name for name, kept in self.kept.items()
                 if not kept.lock.locked() and (kept.page.lost or now - kept.page.last_used > limit)]
        for name in stale:
            try:
                await self.close_session(name)
            except BrowserClosed:
                pass
        return stale

    async def close(self) -> None:
        for name in list(self.kept):
            await self.close_session(name)
