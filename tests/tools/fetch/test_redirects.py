"""Redirects are followed by hand (at most 5 hops), each target re-checked; headers do not cross origins."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.net.site import Site
from tests.tools.fetch.helpers import call
from tests.tools.fetch.tools_for import at, public_tools
from think.net.headers import DEFAULT_ACCEPT


def go(site: Site, location: str, host: str = "site.example", code: int = 302) -> str:
    return at(site, f"/go?code={code}&to={quote(location, safe='')}", host=host)


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
async def test_redirect_to_an_allowlisted_url_is_followed(site: Site, code: int) -> None:
    mirror = at(site, "/data.json", "mirror.example")
    result = await call(public_tools(site), "fetch_url", url=go(site, mirror, code=code))
    assert result["ok"] and result["final_url"] == at(site, "/data.json", "mirror.example")
    assert site.paths() == ["/go", "/data.json"]


async def test_relative_redirect(site: Site) -> None:
    result = await call(public_tools(site), "fetch_url", url=go(site, "/doc.md"))
    assert result["final_url"] == at(site, "/doc.md") and "# Notes" in result["body"]


@pytest.mark.parametrize("location", [
    "http://other.example:{port}/data.json",             # not on the allowlist
    "http://127.0.0.1:{port}/data.json",                 # permitted address, but not allowlisted
    "ftp://site.example/x",                              # scheme
    "http://user:pw@site.example:{port}/data.json",      # credentials
])
async def test_redirect_off_the_allowlist_is_refused(site: Site, location: str) -> None:
    target = location.format(port=site.port)
    result = await call(public_tools(site), "fetch_url", url=go(site, target))
    assert (result["ok"], result["code"], result["status"]) == (False, "disallowed_redirect", 302)
    assert result["final_url"] == go(site, target)
    assert site.paths() == ["/go"]


@pytest.mark.parametrize("location", [
    "http://localhost:{port}/data.json", "http://127.0.0.2:{port}/", "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:{port}/", "http://2130706433:{port}/", "http://a.internal/",
])
async def test_redirect_to_a_blocked_host_is_refused_even_when_allowlisted(site: Site, location: str) -> None:
    result = await call(public_tools(site, allowlist=["http://**"]), "fetch_url",
                        url=go(site, location.format(port=site.port)))
    assert (result["code"], result["status"]) == ("disallowed_redirect", 302)
    assert "private or local" in result["message"]
    assert site.paths() == ["/go"]


async def test_redirect_to_a_name_that_resolves_privately_is_refused_at_connect_time(site: Site) -> None:
    result = await call(public_tools(site), "fetch_url", url=go(site, at(site, "/data.json", "rebind.example")))
    assert result["code"] == "disallowed_redirect" and "10.0.0.5" in result["message"]
    assert result["final_url"] == at(site, "/data.json", "rebind.example")
    assert site.paths() == ["/go"]


async def test_redirect_loops_stop_after_five_hops(site: Site) -> None:
    result = await call(public_tools(site), "fetch_url", url=at(site, "/loop"))
    assert result == {"ok": False, "code": "request_failed", "message": "Too many redirects.",
                      "final_url": at(site, "/loop")}
    assert site.paths() == ["/loop"] * 6


async def test_redirect_policies(site: Site) -> None:
    none = await call(public_tools(site, follow_redirects="none"), "fetch_url", url=go(site, "/data.json"))
    assert (none["code"], none["message"]) == ("disallowed_redirect", "Redirects are disabled.")
    same = public_tools(site, follow_redirects="same-origin", allowlist=[f"http://site.example:{site.port}/go",
                                                                         f"http://mirror.example:{site.port}/**"])
    followed = await call(same, "fetch_url", url=go(site, "/data.json"))  # same origin, though not allowlisted
    assert followed["ok"] and followed["json"]["station"] == "Brest"
    crossed = await call(same, "fetch_url", url=go(site, at(site, "/data.json", "mirror.example")))
    assert (crossed["code"], crossed["message"]) == ("disallowed_redirect", "Redirect escaped the original origin.")


async def test_headers_are_dropped_across_origins(site: Site) -> None:
    tools = public_tools(site)
    asked = {"accept-language": "fr", "accept": "application/json"}
    same = await call(tools, "fetch_url", url=go(site, "/headers"), headers=asked)
    assert same["json"]["accept-language"] == "fr" and same["json"]["accept"] == "application/json"
    crossed = await call(tools, "fetch_url", url=go(site, at(site, "/headers", "mirror.example")), headers=asked)
    assert "accept-language" not in crossed["json"] and crossed["json"]["accept"] == DEFAULT_ACCEPT
    assert crossed["json"]["host"] == f"mirror.example:{site.port}"
