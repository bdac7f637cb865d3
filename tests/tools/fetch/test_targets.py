"""`fetch_<name>` tools: paths on a fixed origin, path allowlists, fixed server-side headers."""

from __future__ import annotations

from urllib.parse import quote

from tests.net.site import Site
from tests.tools.fetch.helpers import call
from tests.tools.fetch.tools_for import NAMES
from think.net import StaticResolver
from think.tools.fetch import FetchTarget, create_fetch_tools
from think.tools.tool import Tool


def service(site: Site, **options: object) -> dict[str, Tool]:
    target = FetchTarget(base_url=site.origin, allowlist=["/data.json", "/headers", "/go", "/api/**"],
                         headers={"Authorization": "Bearer server-secret", "Accept": "application/json"},
                         description="Tide data for Brest.")
    return create_fetch_tools(targets={"tides": target}, resolver=StaticResolver(NAMES), **options)  # type: ignore[arg-type]


async def test_paths_resolve_against_the_base_url(site: Site) -> None:
    tools = service(site)
    assert 'the "tides" service. Tide data for Brest.' in tools["fetch_tides"].description
    assert "path" in tools["fetch_tides"].input_schema["properties"]
    result = await call(tools, "fetch_tides", path="/data.json")
    assert result["ok"] and result["json"]["station"] == "Brest" and result["final_url"] == site.url("/data.json")
    absolute = await call(tools, "fetch_tides", path=site.url("/data.json"))
    assert absolute["ok"]


async def test_a_target_may_be_on_a_private_address_but_stays_on_its_origin(site: Site) -> None:
    tools = service(site)
    for path in ("/page.html", "/api/../page.html", "http://site.example:{port}/data.json", "//evil.example/data.json",
                 "http://127.0.0.1:{other}/data.json", "https://127.0.0.1:{port}/data.json"):
        result = await call(tools, "fetch_tides", path=path.format(port=site.port, other=site.port + 1))
        assert (result["ok"], result["code"]) == (False, "disallowed_url"), path
    assert site.requests == []


async def test_fixed_headers_are_sent_and_win_over_the_model(site: Site) -> None:
    result = await call(service(site), "fetch_tides", path="/headers",
                        headers={"accept": "text/html", "authorization": "Bearer model"})
    sent = result["json"]
    assert sent["authorization"] == "Bearer server-secret" and sent["accept"] == "application/json"


async def test_targets_never_follow_cross_origin_redirects(site: Site) -> None:
    tools = service(site)
    away = await call(tools, "fetch_tides", path=f"/go?to={quote(f'http://site.example:{site.port}/data.json')}")
    assert away["code"] == "disallowed_redirect" and "origin" in away["message"]
    home = await call(tools, "fetch_tides", path=f"/go?to={quote('/data.json')}")
    assert home["ok"]
    off_list = await call(tools, "fetch_tides", path=f"/go?to={quote('/page.html')}")
    assert off_list["code"] == "disallowed_redirect"


async def test_a_target_can_keep_the_private_network_rules(site: Site) -> None:
    strict = FetchTarget(base_url=site.origin, allowlist=["/**"], allow_private_networks=False)
    tools = create_fetch_tools(targets={"strict": strict})
    result = await call(tools, "fetch_strict", path="/data.json")
    assert result["code"] == "disallowed_url" and site.requests == []
