"""Outbound network access: the one URL policy every capability that reaches the network uses.

`UrlPolicy` decides (allowlist, schemes, credentials, blocked hosts, resolved addresses,
redirects); `create_client` / `UrlPolicy.client()` give an HTTP client that enforces it at
connect time; `think.net.headers` holds the request header rules. See docs/fetch.md.
"""

from think.net.addresses import blocked_address, blocked_host
from think.net.client import BlockedRequest, create_client, create_httpx2_client, read_capped
from think.net.patterns import Allowlist, Pattern
from think.net.policy import Decision, RedirectMode, UrlPolicy, origin_of
from think.net.resolver import Resolver, StaticResolver, SystemResolver

__all__ = [
    "Allowlist",
    "BlockedRequest",
    "Decision",
    "Pattern",
    "RedirectMode",
    "Resolver",
    "StaticResolver",
    "SystemResolver",
    "UrlPolicy",
    "blocked_address",
    "blocked_host",
    "create_client",
    "create_httpx2_client",
    "origin_of",
    "read_capped",
]
