"""The test site, shared by the fetch tool tests of a module; requests are forgotten per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.net.site import Site, serve_site


@pytest.fixture(scope="module")
def served() -> Iterator[Site]:
    with serve_site() as site:
        yield site


@pytest.fixture
def site(served: Site) -> Site:
    served.requests.clear()
    return served
