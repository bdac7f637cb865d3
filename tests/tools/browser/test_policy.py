"""Navigation obeys the fetch URL policy: direct, through a redirect, from the page's own script,
in frames and subresources, after DNS resolution; what is not intercepted (a WebSocket) fails."""

from __future__ import annotations

from tests.tools.browser.helpers import LOCAL, attached, call, eventually
from tests.tools.browser.site import BrowserSite
from think.net import StaticResolver, UrlPolicy
from think.tools.browser import Browser
from think.tools.browser.process import Chromium


async def test_a_blocked_host_is_refused_before_anything_loads(chromium: Chromium, site: BrowserSite) -> None:
    tools = attached(chromium)
    for url in (f"{site.blocked_origin}/secret", "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data",
                "http://[::1]/", "file:///etc/passwd", "chrome://version", "http://user:pw@127.0.0.1/"):
        result = await call(tools, "browser_markdown", url=url)
        assert result["ok"] is False and result["code"] == "disallowed_url", (url, result)
    assert site.paths() == []


async def test_a_redirect_to_a_blocked_host_is_refused(chromium: Chromium, site: BrowserSite) -> None:
    tools = attached(chromium)
    result = await call(tools, "browser_markdown", url=site.url(f"/go?to={site.blocked_origin}/secret"))
    assert result["ok"] is False and result["code"] == "disallowed_redirect"
    assert result["url"] == f"{site.blocked_origin}/secret" and "localhost" in result["message"]
    assert site.paths() == ["/go"]
    to_file = await call(tools, "browser_markdown", url=site.url("/go?to=file:///etc/passwd"))
    assert to_file["ok"] is False and "root:" not in str(to_file)


async def test_an_allowed_redirect_is_followed(chromium: Chromium, site: BrowserSite) -> None:
    result = await call(attached(chromium), "browser_markdown", url=site.url("/go?to=/table.html"))
    assert result["ok"] is True and result["url"] == site.url("/table.html") and "Albatross" in result["markdown"]


async def test_frames_and_subresources_from_a_blocked_host_are_refused(chromium: Chromium, site: BrowserSite) -> None:
    result = await call(attached(chromium), "browser_markdown", url=site.url("/framed.html"))
    assert result["ok"] is True and "Outer" in result["markdown"]
    assert {b["url"] for b in result["blocked"]} == {f"{site.blocked_origin}/secret",
                                                     f"{site.blocked_origin}/secret?img"}
    assert "/secret" not in site.paths()


async def test_the_pages_own_navigation_to_a_blocked_host_is_refused(chromium: Chromium, site: BrowserSite) -> None:
    browser = Browser(UrlPolicy(["**"], allow_private_networks=LOCAL), cdp_url=chromium.websocket_url, timeout=15)
    page = await browser.new_page()
    try:
        await page.navigate(site.url("/nav.html"))
        await eventually(page.refusals, within=15)  # the page's timer fires after its load event
        (refusal,) = page.refusals()
        assert refusal.url == f"{site.blocked_origin}/secret?nav" and refusal.rule == "host"
        assert "/secret" not in site.paths()
        scripted = await page.evaluate(f"fetch('{site.blocked_origin}/secret').then(() => 'read', e => 'refused')")
        assert scripted == "refused"
        assert "/secret" not in site.paths()
    finally:
        await page.close()
        await browser.close()


async def test_the_allowlist_applies_to_subresources(chromium: Chromium, site: BrowserSite) -> None:
    policy = UrlPolicy([f"{site.origin}/app.html", f"{site.origin}/image.png"], allow_private_networks=LOCAL)
    result = await call(attached(chromium, policy=policy), "browser_markdown", url=site.url("/app.html"))
    assert result["ok"] is True
    assert [b["url"] for b in result["blocked"]] == [site.url("/data.json")]
    assert "Station Brest" not in result["markdown"] and "/data.json" not in site.paths()


async def test_a_name_that_resolves_to_a_blocked_address_is_refused_at_connect(chromium: Chromium,
                                                                               site: BrowserSite) -> None:
    resolver = StaticResolver({"harbour.test": ["127.0.0.1"], "rebind.test": ["10.0.0.7"]})
    tools = attached(chromium, resolver=resolver)
    good = await call(tools, "browser_markdown", url=f"http://harbour.test:{site.port}/table.html")
    assert good["ok"] is True and "Albatross" in good["markdown"]
    bad = await call(tools, "browser_markdown", url=f"http://rebind.test:{site.port}/secret")
    assert bad["ok"] is False and bad["code"] == "disallowed_url" and "10.0.0.7" in bad["message"]
    assert "/secret" not in site.paths()


async def test_a_websocket_from_the_page_does_not_connect(chromium: Chromium, site: BrowserSite) -> None:
    code = f"""
cdp.navigate("{site.url('/table.html')}")
cdp.evaluate("new Promise(done => {{ const ws = new WebSocket('ws://127.0.0.1:{site.port}/socket');"
             " ws.onopen = () => done('open'); ws.onerror = () => done('failed'); }})")
"""
    result = await call(attached(chromium), "browser_execute", code=code)
    assert result["ok"] is True and result["value"] == "failed"
    assert "/socket" not in site.paths()
