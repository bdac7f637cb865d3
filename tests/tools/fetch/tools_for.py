"""Fetch tools over the test site, reached as `site.example` / `mirror.example` (a test resolver
maps both to 127.0.0.1, the only private address these tools may connect to)."""

from __future__ import annotations

from typing import Any

from tests.net.site import Site
from think.net import StaticResolver
from think.tools.fetch import create_fetch_tools
from think.tools.tool import Tool

NAMES = {"site.example": ["127.0.0.1"], "mirror.example": ["127.0.0.1"], "rebind.example": ["10.0.0.5"],
         "evil.example": ["127.0.0.1"]}


def public_tools(site: Site, **options: Any) -> dict[str, Tool]:
    allowlist = options.pop("allowlist", [f"http://site.example:{site.port}/**",
                                          f"http://mirror.example:{site.port}/**",
                                          f"http://rebind.example:{site.port}/**"])
    options.setdefault("allow_private_networks", ["127.0.0.1/32"])
    return create_fetch_tools(allowlist, resolver=StaticResolver(NAMES), **options)


def at(site: Site, path: str, host: str = "site.example") -> str:
    return site.url(path, host=host)
