"""Allowlist patterns: which URLs a capability may request.

* `**` matches anything, `/` included; `*` matches anything but `/`; everything else is literal.
* A bare origin (`https://docs.example.com`, no path) means that origin and every path under it.
* A pattern starting with `/` matches the URL's path only (`/v1/docs/**`), for targets whose
  origin is fixed by configuration.
* Any other pattern matches `scheme://host[:port]/path`: the host lower-cased with a trailing
  dot removed, the default port left out; query and fragment are ignored for matching (they are
  still sent).

Host patterns (`Allowlist.of_hosts`, used for extensions' network grants) match the host only:
`api.example.com`, `*.example.com` (any name under it, not the name itself), an optional
`:port` (without one, any port); every scheme the policy allows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import httpx

_DEFAULT_PORTS = {"http": 80, "https": 443}
_BARE_ORIGIN = re.compile(r"^https?://[^/]+$", re.IGNORECASE)
_HOST_PATTERN = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$")


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
    """`"path"` (matches the path), `"url"` (matches scheme, host, port and path) or `"host"`
    (matches the host, and the port when the pattern names one)."""
    regex: re.Pattern[str]
    port: int | None = None

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

    @classmethod
    def host(cls, text: str) -> Pattern:
        """A host pattern (see the module docs); `ValueError` for anything else (a scheme, a
        path, a wildcard that is not a leading `*.`)."""
        normalized = text.strip().lower().rstrip(".")
        if not _HOST_PATTERN.match(normalized):
            raise ValueError(f"{text!r} is not a host pattern: use a host name such as 'api.example.com' "
                             "or '*.example.com', optionally with ':port'")
        name, _, port = normalized.partition(":")
        suffix = re.escape(name[2:]) if name.startswith("*.") else None
        regex = re.compile(rf"[^/:]+\.{suffix}" if suffix is not None else re.escape(name))
        return cls(text, "host", regex, int(port) if port else None)

    def matches(self, url: httpx.URL) -> bool:
        if self.scope == "host":
            port = url.port or _DEFAULT_PORTS.get(url.scheme)
            return (self.port is None or self.port == port) and self.regex.fullmatch(url.host.rstrip(".")) is not None
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

    @classmethod
    def of_hosts(cls, patterns: Iterable[str]) -> Allowlist:
        """Host patterns (see the module docs); `ValueError` names the first that is not one."""
        return cls(tuple(Pattern.host(p) for p in patterns))

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, url: httpx.URL) -> bool:
        return any(p.matches(url) for p in self.patterns)
