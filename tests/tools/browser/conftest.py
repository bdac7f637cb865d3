"""One Chromium and one test site per test module (Chromium starts slowly on a loaded machine);
tests attach their tools to the shared browser with `cdp_url` unless they need their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.system_tools import need
from tests.tools.browser.site import BrowserSite, serve_browser_site
from think.tools.browser.process import CANDIDATES, Chromium, launch_chromium


def chromium_binary() -> str:
    import shutil

    name = next((c for c in CANDIDATES if shutil.which(c)), "chromium")
    return need(name, purpose="the browser tool tests")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Chromium]:
    browser = launch_chromium(chromium_binary(), timeout=90)
    yield browser
    browser.kill()


@pytest.fixture(scope="module")
def served() -> Iterator[BrowserSite]:
    with serve_browser_site() as site:
        yield site


@pytest.fixture
def site(served: BrowserSite) -> BrowserSite:
    served.requests.clear()
    return served
