"""Session modes (one-shot, dynamic, reuse by key), `sweep()`, concurrency and cancellation: every
page a call opened is disposed of when it should be, and kept pages are the agent's own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.tools.browser.helpers import attached, call, eventually
from tests.tools.browser.site import BrowserSite
from think.tools.browser import CdpConnection
from think.tools.browser.process import Chromium


class Agent:
    def __init__(self, name: str) -> None:
        self.name = name


@pytest.fixture
async def contexts(chromium: Chromium) -> AsyncIterator[CdpConnection]:
    """A watcher connection: `Target.getBrowserContexts` counts the pages' browser contexts."""
    connection = await CdpConnection.connect(chromium.websocket_url)
    yield connection
    await connection.close()


async def count(connection: CdpConnection) -> int:
    return len((await connection.send("Target.getBrowserContexts"))["browserContextIds"])


async def test_one_shot_calls_share_nothing_and_leave_nothing(chromium: Chromium, site: BrowserSite,
                                                              contexts: CdpConnection) -> None:
    tools = attached(chromium)
    before = await count(contexts)
    first = await call(tools, "browser_markdown", url=site.url("/cookie?set=one"))
    second = await call(tools, "browser_markdown", url=site.url("/cookie"))
    assert "none" in second["markdown"] and first["ok"] is True
    assert "session_id" not in first
    assert await count(contexts) == before
    assert "session_id" not in tools["browser_markdown"].input_schema["properties"]


async def test_a_dynamic_session_is_kept_until_closed(chromium: Chromium, site: BrowserSite,
                                                      contexts: CdpConnection) -> None:
    tools = attached(chromium, session="dynamic")
    alice, bob = Agent("alice"), Agent("bob")
    before = await count(contexts)
    opened = await call(tools, "browser_markdown", alice, url=site.url("/cookie?set=kept"), keep=True)
    session_id = opened["session_id"]
    assert await count(contexts) == before + 1
    again = await call(tools, "browser_markdown", alice, url=site.url("/cookie"), session_id=session_id)
    assert "kept" in again["markdown"] and again["session_id"] == session_id
    stolen = await call(tools, "browser_markdown", bob, url=site.url("/cookie"), session_id=session_id)
    assert stolen["ok"] is False and stolen["code"] == "session_gone"
    code = await call(tools, "browser_execute", alice, code="cdp.evaluate('document.cookie')", session_id=session_id)
    assert code["value"] == "visit=kept"
    closed = await call(tools, "browser_links", alice, url=site.url("/table.html"), session_id=session_id, close=True)
    assert closed["ok"] is True and "session_id" not in closed
    assert await count(contexts) == before
    gone = await call(tools, "browser_markdown", alice, url=site.url("/cookie"), session_id=session_id)
    assert gone["ok"] is False and gone["code"] == "session_gone"
    unkept = await call(tools, "browser_markdown", alice, url=site.url("/cookie"))
    assert "session_id" not in unkept and await count(contexts) == before


async def test_reuse_by_key_keeps_one_page_per_agent_and_sweep_closes_it(chromium: Chromium, site: BrowserSite,
                                                                        contexts: CdpConnection) -> None:
    tools = attached(chromium, session={"reuse": "research"})
    alice, bob = Agent("alice"), Agent("bob")
    before = await count(contexts)
    await call(tools, "browser_markdown", alice, url=site.url("/cookie?set=alice"))
    mine = await call(tools, "browser_markdown", alice, url=site.url("/cookie"))
    theirs = await call(tools, "browser_markdown", bob, url=site.url("/cookie"))
    assert "alice" in mine["markdown"] and "none" in theirs["markdown"]
    assert await count(contexts) == before + 2
    assert await tools.sweep(max_idle=3600) == []
    assert sorted(await tools.sweep(max_idle=0)) == ["reuse:Agent:alice:research", "reuse:Agent:bob:research"]
    assert await count(contexts) == before
    fresh = await call(tools, "browser_markdown", alice, url=site.url("/cookie"))
    assert "none" in fresh["markdown"]
    await tools.close()
    assert await count(contexts) == before


async def test_concurrent_calls_each_get_their_page(chromium: Chromium, site: BrowserSite,
                                                    contexts: CdpConnection) -> None:
    tools = attached(chromium)
    before = await count(contexts)
    results = await asyncio.gather(*(call(tools, "browser_markdown", url=site.url(path))
                                     for path in ("/table.html", "/app.html", "/page.html", "/table.html")))
    assert [r["title"] for r in results] == ["Boats", "Rendered", "Tides", "Boats"]
    assert await count(contexts) == before


async def test_a_cancelled_call_disposes_of_its_page(chromium: Chromium, site: BrowserSite,
                                                     contexts: CdpConnection) -> None:
    tools = attached(chromium)
    before = await count(contexts)
    task = asyncio.create_task(call(tools, "browser_markdown", url=site.url("/slow")))
    await eventually(lambda: "/slow" in site.paths(), within=15)
    assert await count(contexts) == before + 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await count(contexts) == before
    after = await call(tools, "browser_markdown", url=site.url("/table.html"))
    assert after["ok"] is True


async def test_closed_pages_leave_no_event_handlers(chromium: Chromium, site: BrowserSite) -> None:
    tools = attached(chromium)
    await call(tools, "browser_markdown", url=site.url("/table.html"))
    link = await tools.browser.link()
    before = link.connection.subscriptions
    for _ in range(3):
        assert (await call(tools, "browser_links", url=site.url("/framed.html")))["ok"] is True
    assert link.connection.subscriptions == before
