"""A pinned connection still verifies TLS against the URL's host name: the socket goes to the
checked address, the certificate must be the name's."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme

from tests.net.site import Site, serve_site
from think.net import StaticResolver, UrlPolicy


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_site(ca: trustme.CA, tmp_path: Path) -> Iterator[Site]:
    cert = ca.issue_cert("site.example")
    certfile, keyfile = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(certfile))
    cert.private_key_pem.write_to_path(str(keyfile))
    with serve_site(certfile=str(certfile), keyfile=str(keyfile)) as site:
        yield site


def policy() -> UrlPolicy:
    return UrlPolicy(allow_private_networks=["127.0.0.1/32"],
                     resolver=StaticResolver({"site.example": ["127.0.0.1"], "other.example": ["127.0.0.1"]}))


async def test_the_certificate_is_checked_for_the_name_not_the_address(tls_site: Site, ca: trustme.CA) -> None:
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    async with policy().client(verify=trusted) as client:
        response = await client.get(tls_site.url("/headers", host="site.example"))
        assert response.json()["host"] == f"site.example:{tls_site.port}"
        with pytest.raises(httpx.ConnectError, match=r"(?i)certificate|hostname"):
            await client.get(tls_site.url("/headers", host="other.example"))
    assert tls_site.paths() == ["/headers"]


async def test_an_unknown_authority_is_refused(tls_site: Site) -> None:
    async with policy().client() as client:
        with pytest.raises(httpx.ConnectError, match=r"(?i)certificate"):
            await client.get(tls_site.url("/headers", host="site.example"))
    assert tls_site.requests == []
