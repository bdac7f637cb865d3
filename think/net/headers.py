"""Request header rules shared by outbound capabilities.

* `model_headers`: of the headers a model asked for, only those named in the allowlist (names
  compared case-insensitively); values with line breaks are dropped.
* `merge_headers`: model headers under fixed server-side headers (the fixed ones win, names
  lower-cased so `Accept` and `accept` cannot both be sent).
* `with_default_accept`: add `Accept: default` unless one is set or the default is empty.
* `cross_origin_headers`: what survives a redirect to another origin — only the default Accept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

DEFAULT_ACCEPT = "text/markdown, text/plain;q=0.9, application/json;q=0.8, text/html;q=0.5, */*;q=0.1"
"""Markdown first, but anything is acceptable, so a strict server never answers 406."""
DEFAULT_MODEL_HEADER_ALLOWLIST = ("accept", "accept-language", "range")


def _safe(name: str, value: str) -> bool:
    return bool(name) and not any(c in name + value for c in "\r\n\0")


def model_headers(headers: Mapping[str, str] | None, allowlist: Iterable[str]) -> dict[str, str]:
    allowed = {name.lower() for name in allowlist}
    return {name.lower(): str(value) for name, value in (headers or {}).items()
            if name.lower() in allowed and _safe(name, str(value))}


def merge_headers(fixed: Mapping[str, str], model: Mapping[str, str]) -> dict[str, str]:
    out = {name.lower(): value for name, value in model.items()}
    out.update((name.lower(), value) for name, value in fixed.items())
    return out


def with_default_accept(headers: Mapping[str, str], default_accept: str) -> dict[str, str]:
    out = dict(headers)
    if default_accept and not any(name.lower() == "accept" for name in out):
        out["accept"] = default_accept
    return out


def cross_origin_headers(default_accept: str) -> dict[str, str]:
    return with_default_accept({}, default_accept)
