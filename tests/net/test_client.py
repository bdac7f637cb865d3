"""Clients that enforce the URL policy at connect time, against a real server on 127.0.0.1:
resolved addresses are checked (DNS rebinding), connections are pinned to them, and redirects
the client follows are re-checked."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import anyio
import httpx
import pytest

from tests.net.site import Site, serve_site
from think.net import BlockedRequest, StaticResolver, UrlPolicy, create_httpx2_client


@pytest.fixture
def site() -> Iterator[Site]:
    with serve_site() as served:
        yield served


async def test_private_address_refused_before_anything_is_sent(site: Site) -> None:
    async with UrlPolicy().client() as client:
        with pytest.raises(BlockedRequest) as caught:
            await client.get(site.url("/data.json"))
    assert caught.value.decision.rule == "host"
    assert site.requests == []


async def test_explicit_private_networks_reach_the_local_server(site: Site) -> None:
    async with UrlPolicy(allow_private_networks=True).client() as client:
        response = await client.get(site.url("/data.json"))
    assert response.json()["station"] == "Brest"


async def test_public_name_resolving_to_a_private_address_is_refused(site: Site) -> None:
    """DNS rebinding: the name passes the static rules, its address does not."""
    resolver = StaticResolver({"tides.example": ["127.0.0.1"]})
    policy = UrlPolicy(["http://tides.example:*/**"], resolver=resolver)
    assert policy.check(site.url("/data.json", host="tides.example"))
    async with policy.client() as client:
        with pytest.raises(BlockedRequest) as caught:
            await client.get(site.url("/data.json", host="tides.example"))
    assert caught.value.decision.rule == "address" and "127.0.0.1" in str(caught.value)
    assert resolver.lookups == {"tides.example": 1}
    assert site.requests == []


async def test_one_private_address_among_public_ones_refuses_the_name(site: Site) -> None:
    resolver = StaticResolver({"mixed.example": ["127.0.0.1", "93.184.216.34"]})
    async with UrlPolicy(resolver=resolver).client() as client:
        with pytest.raises(BlockedRequest):
            await client.get(site.url("/data.json", host="mixed.example"))
    assert site.requests == []


async def test_connection_goes_to_the_checked_address(site: Site) -> None:
    """`pinned.example` is known to the test resolver only: the request arrives, so the
    connection used the address the policy checked, not a second lookup by the system."""
    resolver = StaticResolver({"pinned.example": ["127.0.0.1"]})
    policy = UrlPolicy(allow_private_networks=["127.0.0.1/32"], resolver=resolver)
    async with policy.client() as client:
        response = await client.get(site.url("/headers", host="pinned.example"))
        again = await client.get(site.url("/headers", host="pinned.example"))  # a kept-alive connection
    assert response.json()["host"] == f"pinned.example:{site.port}"
    assert again.status_code == 200
    assert resolver.lookups == {"pinned.example": 1}


async def test_permitted_network_does_not_open_others(site: Site) -> None:
    resolver = StaticResolver({"other.example": ["10.9.8.7"], "loop.example": ["127.0.0.2"]})
    policy = UrlPolicy(allow_private_networks=["127.0.0.1/32"], resolver=resolver)
    async with policy.client() as client:
        for host in ("other.example", "loop.example"):
            with pytest.raises(BlockedRequest):
                await client.get(site.url("/data.json", host=host))


async def test_unresolvable_name_is_a_refusal(site: Site) -> None:
    policy = UrlPolicy(resolver=StaticResolver({}))
    async with policy.client() as client:
        with pytest.raises(BlockedRequest) as caught:
            await client.get("http://nowhere.example/")
    assert "does not resolve" in str(caught.value)


async def test_followed_redirects_are_rechecked(site: Site) -> None:
    resolver = StaticResolver({"site.example": ["127.0.0.1"]})
    policy = UrlPolicy([f"http://site.example:{site.port}/**"], allow_private_networks=["127.0.0.1/32"],
                       resolver=resolver)
    async with policy.client(follow_redirects=True) as client:
        ok = await client.get(site.url("/go?to=/data.json", host="site.example"))
        assert ok.json()["station"] == "Brest"
        with pytest.raises(BlockedRequest) as caught:
            await client.get(site.url(f"/go?to=http://127.0.0.1:{site.port}/data.json", host="site.example"))
    assert caught.value.decision.rule == "allowlist"
    assert site.paths() == ["/go", "/data.json", "/go"]


async def test_environment_proxies_are_ignored(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://10.255.255.1:3128")
    monkeypatch.setenv("ALL_PROXY", "http://10.255.255.1:3128")
    async with UrlPolicy(allow_private_networks=["127.0.0.1/32"]).client() as client:
        response = await client.get(site.url("/data.json"))
    assert response.status_code == 200


async def test_httpx2_client_for_the_mcp_sdk(site: Site) -> None:
    factory = functools.partial(create_httpx2_client, UrlPolicy(resolver=StaticResolver({"x.example": ["127.0.0.1"]})))
    async with factory(headers={"x-a": "1"}, timeout=None, auth=None) as client:
        with pytest.raises(BlockedRequest):
            await client.get(site.url("/data.json", host="x.example"))
        with pytest.raises(BlockedRequest):
            await client.get(site.url("/data.json"))
    allowed = functools.partial(create_httpx2_client, UrlPolicy(allow_private_networks=True))
    async with allowed() as client:
        response = await client.get(site.url("/headers"))
    assert response.status_code == 200
    assert site.paths() == ["/headers"]


def test_blocked_request_is_an_httpx_connect_error() -> None:
    assert issubclass(BlockedRequest, httpx.ConnectError)


class HangingResolver:
    async def resolve(self, host: str, port: int) -> list[str]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_lookup_that_hangs_is_a_connect_timeout() -> None:
    async with UrlPolicy(resolver=HangingResolver()).client(timeout=0.2) as client:
        with pytest.raises(httpx.ConnectTimeout):
            await client.get("http://slow-dns.example/")
