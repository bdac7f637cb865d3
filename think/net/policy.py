"""The outbound URL policy: the one place that decides which URLs and addresses a capability may
reach (fetch tools, browser navigation, extension fetch, MCP server URLs).

    policy = UrlPolicy(["https://docs.example.com/**"])
    policy.check("https://docs.example.com/a")       # Decision(allowed=True, …)
    async with policy.client() as client:            # every request and connection checked
        response = await client.get("https://docs.example.com/a")

Static rules (`check`): the URL parses, its scheme is `http`/`https`, it carries no credentials,
no `.`/`..` path segment is left once the path is decoded (`/v1/%2e%2e/admin`),
its host is not refused by `think.net.addresses.blocked_host`, it stays on `origins` when those
are fixed, and it matches the allowlist (None: any URL the other rules allow).

Connect-time rule (`resolve`, used by `think.net.client`): every address a host name resolves to
is checked with `blocked_address`, and the connection goes to a checked address only — a public
name that resolves to a private address (DNS rebinding) is refused.

`allow_private_networks=True` turns the host and address rules off (tests against 127.0.0.1,
targets on a private network the developer configured); a list of networks (`["10.1.0.0/16"]`)
permits addresses in those networks only, every other rule staying on. It is an argument, never
read from the environment.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import httpx

from think.errors import ConfigurationError
from think.net.addresses import blocked_address, blocked_host
from think.net.patterns import Allowlist
from think.net.resolver import Resolver, SystemResolver

if TYPE_CHECKING:
    from think.net.client import BlockedRequest

RedirectMode = Literal["none", "same-origin", "allowlisted"]
Rule = Literal["", "invalid", "scheme", "credentials", "host", "address", "origin", "allowlist", "redirect"]
_DEFAULT_PORTS = {"http": 80, "https": 443}
_DOT_SEGMENTS = frozenset({".", ".."})


@dataclass(frozen=True)
class Decision:
    """The policy's answer for one URL: `allowed`, the parsed `url`, and for a refusal the
    `rule` that refused it and a `reason` fit to show a model or a log."""

    allowed: bool
    url: httpx.URL | None = None
    rule: Rule = ""
    reason: str = ""

    def __bool__(self) -> bool:
        return self.allowed


def origin_of(url: httpx.URL) -> tuple[str, str, int]:
    """(scheme, host, port) with the default port filled in and a trailing dot removed."""
    return url.scheme, url.host.rstrip("."), url.port or _DEFAULT_PORTS.get(url.scheme, 0)


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _parse(url: str | httpx.URL | Any) -> httpx.URL | None:
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(str(url))
    except (httpx.InvalidURL, ValueError, TypeError):
        return None
    return parsed


class UrlPolicy:
    """Which URLs may be requested and which addresses connected to.

    Args:
        allowlist: patterns (see `think.net.patterns`), or a compiled `Allowlist` (host patterns:
            `Allowlist.of_hosts`); None allows every URL the other rules allow, an empty list
            allows none. Path-only patterns (`/v1/**`) need `origins`.
        origins: when given, URLs must be on one of these origins (`https://api.example.com`).
        allow_private_networks: True skips the blocked-host and blocked-address rules; networks
            (`["127.0.0.1/32"]`) permit addresses (literal or resolved) in them only.
        resolver: how host names are looked up at connect time (default: the system's).
        schemes: the URL schemes allowed.
    """

    def __init__(self, allowlist: Iterable[str] | Allowlist | None = None, *, origins: Iterable[str] | None = None,
                 allow_private_networks: bool | Iterable[str] = False, resolver: Resolver | None = None,
                 schemes: Sequence[str] = ("http", "https")) -> None:
        self.allowlist = (allowlist if isinstance(allowlist, Allowlist) or allowlist is None
                          else Allowlist.of(allowlist))
        self.origins: frozenset[tuple[str, str, int]] | None = None
        if origins is not None:
            parsed = [_parse(o) for o in origins]
            if any(p is None or not p.is_absolute_url for p in parsed):
                raise ConfigurationError(f"origins must be absolute URLs: {list(origins)!r}")
            self.origins = frozenset(origin_of(p) for p in parsed if p is not None)
        if self.allowlist and self.origins is None and any(p.scope == "path" for p in self.allowlist.patterns):
            raise ConfigurationError("path-only allowlist patterns (starting with '/') need fixed `origins`")
        self.allow_private_networks: bool = allow_private_networks is True
        self.permitted_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
        if not isinstance(allow_private_networks, bool):
            try:
                self.permitted_networks = tuple(ipaddress.ip_network(n, strict=False) for n in allow_private_networks)
            except (TypeError, ValueError) as exc:
                raise ConfigurationError(f"allow_private_networks: True, False or networks ({exc})") from exc
        self.resolver: Resolver = resolver or SystemResolver()
        self.schemes = frozenset(s.lower() for s in schemes)

    def __repr__(self) -> str:
        patterns = [p.text for p in self.allowlist.patterns] if self.allowlist is not None else None
        return (f"UrlPolicy(allowlist={patterns!r}, origins={sorted(self.origins) if self.origins else None!r}, "
                f"allow_private_networks={self.allow_private_networks or [str(n) for n in self.permitted_networks]})")

    # ---- static rules ------------------------------------------------------------------------

    def check(self, url: str | httpx.URL | Any, *, use_allowlist: bool = True) -> Decision:
        """Whether `url` may be requested, by every rule that does not need a lookup
        (`use_allowlist=False`: every rule but the allowlist)."""
        parsed = _parse(url)
        if parsed is None or not parsed.scheme:
            return Decision(False, None, "invalid", f"Invalid URL: {str(url)[:200]}")
        if parsed.scheme not in self.schemes:
            return Decision(False, parsed, "scheme", f"Only {'/'.join(sorted(self.schemes))} URLs are allowed.")
        if not parsed.is_absolute_url:
            return Decision(False, None, "invalid", f"Invalid URL: {str(url)[:200]}")
        if parsed.userinfo:
            return Decision(False, parsed, "credentials", "URLs with embedded credentials are not allowed.")
        if _DOT_SEGMENTS.intersection(parsed.path.replace("\\", "/").split("/")):
            # `..` left after decoding (`%2e%2e`, `..%2f`): a server that decodes then normalizes
            # would serve a path the allowlist never saw.
            return Decision(False, parsed, "invalid", "URL paths with encoded '.' or '..' segments are not allowed.")
        if reason := self.host_reason(parsed.host):
            return Decision(False, parsed, "host", f"Refusing to fetch a private or local address: {reason}")
        if self.origins is not None and origin_of(parsed) not in self.origins:
            return Decision(False, parsed, "origin", f"URL is not on an allowed origin: {parsed}")
        if use_allowlist and self.allowlist is not None and not self.allowlist.matches(parsed):
            return Decision(False, parsed, "allowlist", f"URL is not on the allowlist: {parsed}")
        return Decision(True, parsed)

    def check_redirect(self, location: str, *, current: httpx.URL, initial: httpx.URL,
                       mode: RedirectMode = "allowlisted") -> Decision:
        """Whether a redirect from `current` to `location` (relative or absolute) may be followed:
        `"none"` refuses every redirect, `"same-origin"` requires the origin of `initial`,
        `"allowlisted"` requires the allowlist; the scheme, credential, host and origin rules apply
        in every mode."""
        if mode == "none":
            return Decision(False, None, "redirect", "Redirects are disabled.")
        try:
            target = current.join(location)
        except (httpx.InvalidURL, ValueError, TypeError):
            return Decision(False, None, "redirect", "Invalid redirect target.")
        decision = self.check(target, use_allowlist=mode == "allowlisted")
        if not decision:
            return Decision(False, decision.url, decision.rule, f"Redirect refused: {decision.reason}")
        if mode == "same-origin" and origin_of(target) != origin_of(initial):
            return Decision(False, target, "redirect", "Redirect escaped the original origin.")
        return decision

    def host_reason(self, host: str) -> str | None:
        """Why a URL's host (name or literal address) is refused before any lookup, or None."""
        if self.allow_private_networks:
            return None
        name = host.strip().lower().rstrip(".").strip("[]")
        if _is_address(name):
            return self.check_address(name)
        return blocked_host(name)

    def check_address(self, address: str) -> str | None:
        """Why a resolved address may not be connected to, or None."""
        if self.allow_private_networks:
            return None
        if self.permitted_networks:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            if any(ip in net for net in self.permitted_networks):
                return None
        return blocked_address(address)

    # ---- connect time ------------------------------------------------------------------------

    async def resolve(self, host: str, port: int) -> list[str]:
        """The checked addresses to connect to for `host`; raises `BlockedRequest` when the host or
        any address it resolves to is refused, or when it does not resolve."""
        from think.net.client import BlockedRequest

        name = host.strip("[]")
        if reason := self.host_reason(name):
            raise BlockedRequest(Decision(False, None, "host", f"Refusing to connect: {reason}"))
        addresses = [name] if _is_address(name) else await self._lookup(name, port, BlockedRequest)
        for address in addresses:
            if reason := self.check_address(address):
                raise BlockedRequest(Decision(False, None, "address",
                                              f"Refusing to connect: {name} resolves to {reason}"))
        return addresses

    async def _lookup(self, name: str, port: int, error: type[BlockedRequest]) -> list[str]:
        try:
            found = list(await self.resolver.resolve(name, port))
        except OSError as exc:
            raise error(Decision(False, None, "address", f"{name} does not resolve: {exc}")) from exc
        if not found:
            raise error(Decision(False, None, "address", f"{name} does not resolve"))
        return found

    # ---- clients -----------------------------------------------------------------------------

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        """An `httpx.AsyncClient` that enforces this policy on every request and connection
        (see `think.net.client.create_client` for the arguments)."""
        from think.net.client import create_client

        return create_client(self, **kwargs)
