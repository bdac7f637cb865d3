"""Allowlist patterns: which URLs a capability may request.

* `**` matches anything, `/` included; `*` matches anything but `/`; everything else is literal.
* A bare origin (`https://docs.example.com`, no path) means that origin and every path under it.
* A pattern starting with `/` matches the URL's path only (`/v1/docs/**`), for targets whose
  origin is fixed by configuration.
* Any other pattern matches `scheme://host[:port]/path`: the host lower-cased with a trailing
  dot removed, the default port left out; query and fragment are ignored for matching (they are
  still sent).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import httpx

_BARE_ORIGIN = re.compile(r"^https?://[^/]+$", re.IGNORECASE)


def _glob_regex(glob: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


@dataclass(frozen=True)
class Pattern:
    """One compiled allowlist entry."""

    text: str
    scope: str
    """`"path"` (matches the path) or `"url"` (matches scheme, host, port and path)."""
    regex: re.Pattern[str]

    @classmethod
    def compile(cls, text: str) -> Pattern:
        normalized = text.strip()
        if _BARE_ORIGIN.match(normalized):
            normalized = normalized + "/**"
        if normalized.startswith("/"):
            return cls(text, "path", _glob_regex(normalized))
        scheme, sep, rest = normalized.partition("://")
        if sep:  # the scheme and host of a pattern are matched as the URL's are: lower-cased
            host, slash, path = rest.partition("/")
            normalized = f"{scheme.lower()}://{host.lower().rstrip('.')}{slash}{path}"
        return cls(text, "url", _glob_regex(normalized))

    def matches(self, url: httpx.URL) -> bool:
        subject = url.path if self.scope == "path" else canonical(url)
        return self.regex.fullmatch(subject) is not None


def canonical(url: httpx.URL) -> str:
    """`scheme://host[:port]/path` of a URL, as patterns are matched against it."""
    host = url.host.rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{host}{port}{url.path or '/'}"


@dataclass(frozen=True)
class Allowlist:
    """Compiled patterns; a URL is allowed when any of them matches."""

    patterns: tuple[Pattern, ...]

    @classmethod
    def of(cls, patterns: Iterable[str]) -> Allowlist:
        return cls(tuple(Pattern.compile(p) for p in patterns if p.strip()))

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, url: httpx.URL) -> bool:
        return any(p.matches(url) for p in self.patterns)
