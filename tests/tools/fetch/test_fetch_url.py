"""`fetch_url` against a real local site: what is refused, what comes back, headers, limits."""

from __future__ import annotations

import pytest

from tests.net.site import HUGE_BYTES, PAGE, PNG, Site
from tests.tools.fetch.helpers import call
from tests.tools.fetch.tools_for import NAMES, at, public_tools
from think.errors import ConfigurationError
from think.net import StaticResolver
from think.net.headers import DEFAULT_ACCEPT
from think.storage import Database
from think.tools.fetch import FetchTarget, create_fetch_tools
from think.workspace import Workspace


def test_refuses_to_build_without_an_allowlist_or_targets() -> None:
    for allowlist in (None, [], ["", "  "]):
        with pytest.raises(ConfigurationError):
            create_fetch_tools(allowlist)
    with pytest.raises(ConfigurationError):
        create_fetch_tools(targets={})


def test_tools_by_configuration() -> None:
    assert list(create_fetch_tools(["https://a.example/**"])) == ["fetch_url"]
    target = FetchTarget(base_url="https://api.example", allowlist=["/v1/**"])
    assert list(create_fetch_tools(targets={"docs-api.v2": target})) == ["fetch_docs_api_v2"]
    both = create_fetch_tools(["https://a.example/**"], targets={"docs": target})
    assert list(both) == ["fetch_url", "fetch_docs"]
    with pytest.raises(ConfigurationError):
        create_fetch_tools(targets={"a-b": target, "a_b": target})
    with pytest.raises(ConfigurationError):
        create_fetch_tools(targets={"x": FetchTarget(base_url="ftp://x.example", allowlist=["/**"])})
    with pytest.raises(ConfigurationError):
        create_fetch_tools(targets={"x": FetchTarget(base_url="https://x.example", allowlist=[])})


async def test_html_becomes_wrapped_markdown(site: Site) -> None:
    result = await call(public_tools(site), "fetch_url", url=at(site, "/page.html"))
    assert {k: result[k] for k in ("ok", "status", "final_url", "content_type", "bytes", "truncated", "response")} == {
        "ok": True, "status": 200, "final_url": at(site, "/page.html"), "content_type": "text/html",
        "bytes": len(PAGE.encode()), "truncated": False, "response": "text"}
    body = result["body"]
    assert body.startswith(f'<untrusted_web_content url="{at(site, "/page.html")}" content_type="text/html" '
                           'converted="markdown">\n# Tide tables\n')
    assert body.endswith("\n</untrusted_web_content>")
    assert "High water at **06:12**" in body and f"[Notes]({at(site, '/doc.md')})" in body
    assert "do-not-show" not in body and "color:red" not in body and "Hidden:" not in body
    assert body.count("</untrusted_web_content>") == 1 and "&lt;/untrusted_web_content" in body


async def test_markdown_and_json_and_empty_bodies(site: Site) -> None:
    tools = public_tools(site)
    doc = await call(tools, "fetch_url", url=at(site, "/doc.md"))
    assert doc["content_type"] == "text/markdown" and "converted" not in doc["body"].split("\n", 1)[0]
    assert "# Notes\n\nPlain *markdown*." in doc["body"]
    data = await call(tools, "fetch_url", url=at(site, "/data.json"))
    assert data["response"] == "json" and data["json"] == {"tides": [{"at": "06:12", "height": 4.1}],
                                                            "station": "Brest"}
    assert "body" not in data
    empty = await call(tools, "fetch_url", url=at(site, "/empty"))
    assert empty == {"ok": True, "status": 204, "final_url": at(site, "/empty"), "content_type": "", "bytes": 0,
                     "truncated": False, "response": "text", "body": ""}


async def test_response_modes_can_be_chosen(site: Site) -> None:
    tools = public_tools(site)
    as_text = await call(tools, "fetch_url", url=at(site, "/data.json"), response="text")
    assert as_text["response"] == "text" and '"station":"Brest"' in as_text["body"]
    bad = await call(tools, "fetch_url", url=at(site, "/page.html"), response="json")
    assert (bad["ok"], bad["code"]) == (False, "invalid_json")
    invalid = await call(tools, "fetch_url", url=at(site, "/bad.json"))
    assert invalid == {"ok": False, "code": "invalid_json", "message": "Response body is not valid JSON.",
                       "final_url": at(site, "/bad.json")}


async def test_binary_needs_the_workspace(site: Site) -> None:
    refused = await call(public_tools(site), "fetch_url", url=at(site, "/image.png"))
    assert (refused["ok"], refused["code"]) == (False, "unsupported_content_type")
    workspace = Workspace(Database(":memory:"))
    spilled = await call(public_tools(site, spill_to_workspace=True, workspace=workspace), "fetch_url",
                         url=at(site, "/image.png"))
    assert spilled["response"] == "workspace" and spilled["bytes"] == len(PNG)
    assert spilled["path"].startswith("/fetched/") and spilled["path"].endswith(".png")
    assert await workspace.read_bytes(spilled["path"]) == PNG
    info = await workspace.stat(spilled["path"])
    assert info is not None and info.mime_type == "image/png"
    asked = await call(public_tools(site, workspace=workspace), "fetch_url", url=at(site, "/page.html"),
                       response="workspace")
    assert asked["path"].endswith(".html") and await workspace.read_file(asked["path"]) == PAGE
    nowhere = await call(public_tools(site), "fetch_url", url=at(site, "/page.html"), response="workspace")
    assert (nowhere["ok"], nowhere["code"]) == (False, "unsupported_content_type")


async def test_spill_failure_is_a_result(site: Site) -> None:
    workspace = Workspace(Database(":memory:"), max_file_bytes=100)
    result = await call(public_tools(site, workspace=workspace), "fetch_url", url=at(site, "/image.png"),
                        response="workspace")
    assert result["code"] == "request_failed" and result["message"].startswith("Failed to write workspace file")


async def test_limits(site: Site) -> None:
    tools = public_tools(site, max_bytes=200_000, max_model_chars=1_000)
    huge = await call(tools, "fetch_url", url=at(site, "/huge"))
    assert (huge["ok"], huge["bytes"], huge["truncated"]) == (True, 200_000, True)
    assert "\n... (truncated 199000 chars)\n</untrusted_web_content>" in huge["body"]
    too_large = await call(tools, "fetch_url", url=at(site, "/huge.json"))
    assert (too_large["ok"], too_large["code"]) == (False, "too_large")
    whole = await call(public_tools(site, max_bytes=HUGE_BYTES, max_model_chars=10), "fetch_url", url=at(site, "/huge"))
    assert (whole["bytes"], whole["truncated"]) == (HUGE_BYTES, True)


async def test_timeout_and_http_errors(site: Site) -> None:
    slow = await call(public_tools(site, timeout=0.3), "fetch_url", url=at(site, "/slow"))
    assert slow == {"ok": False, "code": "timeout", "message": "Request timed out.", "final_url": at(site, "/slow")}
    missing = await call(public_tools(site), "fetch_url", url=at(site, "/missing"))
    assert missing == {"ok": False, "code": "non_2xx", "message": "HTTP 404", "status": 404,
                       "final_url": at(site, "/missing")}
    nobody = await call(public_tools(site, allowlist=["http://site.example:*/**"]), "fetch_url",
                        url=f"http://site.example:{_free_port()}/")
    assert nobody["code"] == "request_failed"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("url", [
    "ftp://site.example/x", "file:///etc/passwd", "not a url", "/page.html", "",
    "http://user:secret@site.example:{port}/page.html", "http://site.example@127.0.0.1:{port}/page.html",
    "http://other.example:{port}/page.html", "http://localhost:{port}/page.html", "http://127.0.0.2:{port}/",
    "http://2130706433:{port}/", "http://0x7f000001:{port}/", "http://[::1]:{port}/", "http://169.254.169.254/",
    "http://[::ffff:127.0.0.1]:{port}/", "http://metadata.internal/",
])
async def test_disallowed_urls_send_nothing(site: Site, url: str) -> None:
    result = await call(public_tools(site, allowlist=["http://**"]), "fetch_url", url=url.format(port=site.port))
    assert (result["ok"], result["code"]) == (False, "disallowed_url") and result["message"]
    assert site.requests == []


async def test_allowlist_is_required_even_for_public_hosts(site: Site) -> None:
    result = await call(public_tools(site), "fetch_url", url=at(site, "/page.html", host="mirror.example") + "x")
    assert result["code"] == "non_2xx"  # allowlisted host: the request is made
    refused = await call(public_tools(site, allowlist=[f"http://site.example:{site.port}/page.html"]), "fetch_url",
                         url=at(site, "/doc.md"))
    assert refused["code"] == "disallowed_url" and "allowlist" in refused["message"]


async def test_dns_rebinding_is_refused_at_connect_time(site: Site) -> None:
    """`evil.example` is allowlisted and looks public, but resolves to 127.0.0.1."""
    tools = create_fetch_tools([f"http://evil.example:{site.port}/**"], resolver=StaticResolver(NAMES))
    result = await call(tools, "fetch_url", url=at(site, "/data.json", host="evil.example"))
    assert (result["ok"], result["code"]) == (False, "disallowed_url")
    assert "127.0.0.1" in result["message"]
    assert site.requests == []


async def test_explicit_private_networks_option(site: Site) -> None:
    tools = create_fetch_tools([f"http://127.0.0.1:{site.port}/**"], allow_private_networks=True)
    assert (await call(tools, "fetch_url", url=site.url("/data.json")))["ok"]
    without = create_fetch_tools([f"http://127.0.0.1:{site.port}/**"])
    assert (await call(without, "fetch_url", url=site.url("/data.json")))["code"] == "disallowed_url"


async def test_headers(site: Site) -> None:
    tools = public_tools(site)
    plain = await call(tools, "fetch_url", url=at(site, "/headers"))
    assert plain["json"]["accept"] == DEFAULT_ACCEPT
    asked = await call(tools, "fetch_url", url=at(site, "/headers"), headers={
        "Accept": "application/json", "Accept-Language": "fr", "Range": "bytes=0-", "Authorization": "Bearer x",
        "Cookie": "a=b", "X-Forwarded-For": "10.0.0.1", "Host": "evil.example"})
    sent = asked["json"]
    assert (sent["accept"], sent["accept-language"], sent["range"]) == ("application/json", "fr", "bytes=0-")
    assert not {"authorization", "cookie", "x-forwarded-for"} & set(sent)
    assert sent["host"] == f"site.example:{site.port}"
    none = await call(public_tools(site, default_accept=""), "fetch_url", url=at(site, "/headers"))
    assert "accept" not in none["json"]
    custom = await call(public_tools(site, model_header_allowlist=["X-Trace"]), "fetch_url", url=at(site, "/headers"),
                        headers={"x-trace": "1", "accept-language": "fr"})
    assert custom["json"]["x-trace"] == "1" and "accept-language" not in custom["json"]


async def test_a_cookie_one_call_was_given_is_never_sent_by_another(site: Site) -> None:
    tools = public_tools(site)  # one pooled client behind them, as every agent of a class shares it
    assert (await call(tools, "fetch_url", url=at(site, "/set-cookie")))["ok"]
    echoed = await call(tools, "fetch_url", url=at(site, "/headers"))
    assert "cookie" not in echoed["json"], echoed["json"]
    assert "cookie" not in site.requests[-1][1]
