"""`host.fetch` for an extension with a network grant: per host, on every request and redirect.

The grant's host patterns become a `think.net.UrlPolicy` (`Allowlist.of_hosts`), so the one URL
policy decides: scheme, credentials, private and local hosts, the allowlist; at connect time
every address a name resolves to (a granted name that resolves to 127.0.0.1 is refused), and
each redirect is checked like a new request before it is followed. Bodies are capped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import anyio
import httpx

from think.extensions.capabilities import NetworkOptions
from think.net import Allowlist, BlockedRequest, UrlPolicy, origin_of, read_capped
from think.sandbox.host import HostCallRefused, HostFunction

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
_DROPPED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "cookie", "authorization",
                              "proxy-authorization"})


def policy_for(hosts: Iterable[str], options: NetworkOptions) -> UrlPolicy:
    private = options.allow_private_networks
    return UrlPolicy(Allowlist.of_hosts(hosts), resolver=options.resolver,
                     allow_private_networks=private if isinstance(private, bool) else list(private))


def fetch_function(hosts: Sequence[str], options: NetworkOptions) -> HostFunction:
    policy = policy_for(hosts, options)

    async def fetch(args: dict[str, Any]) -> dict[str, Any]:
        url, method, headers, body = _request(args)
        return await _fetch(policy, options, url, method, headers, body)

    return HostFunction(fetch, ("url", "method", "headers", "body"))


def _request(args: dict[str, Any]) -> tuple[str, str, dict[str, str], str | None]:
    url = args.get("url")
    if not isinstance(url, str):
        raise HostCallRefused("fetch(url, method='GET', headers=None, body=None): url must be text", "TypeError")
    method = str(args.get("method") or "GET").upper()
    if method not in METHODS:
        raise HostCallRefused(f"method must be one of {', '.join(sorted(METHODS))}", "ValueError")
    raw = args.get("headers") or {}
    if not isinstance(raw, dict):
        raise HostCallRefused("headers must be a dict of text", "TypeError")
    headers = {str(k).lower(): str(v) for k, v in raw.items()
               if str(k).lower() not in _DROPPED_HEADERS and not any(c in f"{k}{v}" for c in "\r\n\0")}
    body = args.get("body")
    if body is not None and not isinstance(body, str):
        raise HostCallRefused("body must be text", "TypeError")
    return url, method, headers, body


def _refused(reason: str) -> HostCallRefused:
    return HostCallRefused(f"Extension error: permission denied: {reason}", "PermissionError")


async def _fetch(policy: UrlPolicy, options: NetworkOptions, url: str, method: str, headers: dict[str, str],
                 body: str | None) -> dict[str, Any]:
    decision = policy.check(url)
    if not decision or decision.url is None:
        raise _refused(decision.reason)
    initial = current = decision.url
    try:
        async with policy.client(timeout=options.timeout, follow_redirects=False) as client:
            with anyio.fail_after(options.timeout):
                for _hop in range(MAX_REDIRECTS + 1):
                    async with client.stream(method, current, headers=headers, content=body) as res:
                        location = res.headers.get("location")
                        if res.status_code in REDIRECTS and location:
                            follow = policy.check_redirect(location, current=current, initial=initial)
                            if not follow or follow.url is None:
                                raise _refused(follow.reason)
                            if origin_of(follow.url) != origin_of(current):
                                headers = {}
                            if res.status_code == 303 or (res.status_code in (301, 302) and method == "POST"):
                                method, body = "GET", None
                            current = follow.url
                            continue
                        data, truncated = await read_capped(res, options.max_bytes)
                        return {"status": res.status_code, "url": str(current), "ok": 200 <= res.status_code < 300,
                                "headers": dict(res.headers.items()), "text": data.decode(res.encoding or "utf-8",
                                                                                           "replace"),
                                "truncated": truncated}
                raise HostCallRefused("too many redirects", "OSError")
    except BlockedRequest as exc:
        raise _refused(str(exc)) from None
    except TimeoutError:
        raise HostCallRefused(f"the request took longer than {options.timeout:g} s", "TimeoutError") from None
    except httpx.HTTPError as exc:
        raise HostCallRefused(f"request failed: {exc or type(exc).__name__}", "OSError") from None


__all__ = ["fetch_function", "policy_for"]
