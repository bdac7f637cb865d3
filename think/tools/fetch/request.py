"""One fetch, start to result: the URL checked by the target's `UrlPolicy`, a GET with the header
rules, manual redirects (at most 5, each re-checked), a capped body read, and a structured
result. Nothing here raises for the model's sake; cancellation still propagates.
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import logging
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

import anyio
import httpx
import orjson

from think._version import __version__
from think.net import BlockedRequest, RedirectMode, UrlPolicy, origin_of, read_capped
from think.net.headers import cross_origin_headers, merge_headers, model_headers, with_default_accept
from think.tools.fetch.content import (
    HTML_TYPES,
    extension_for,
    html_to_markdown,
    is_json,
    is_textual,
    media_type,
    truncate,
    wrap_untrusted,
)

ResponseMode: TypeAlias = Literal["text", "json", "auto", "workspace"]
ErrorCode: TypeAlias = Literal["disallowed_url", "disallowed_redirect", "timeout", "aborted", "non_2xx",
                               "unsupported_content_type", "invalid_json", "too_large", "request_failed"]
FetchResult: TypeAlias = dict[str, Any]
MAX_REDIRECTS = 5
HTML_CHARS_PER_MODEL_CHAR = 16
"""At most this many characters of HTML (scripts and styles removed) are converted per character
of `max_model_chars`: markup is rarely more than that, and converting text the model will never
see would cost CPU (2-4 ms per KB)."""
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_ABSOLUTE = re.compile(r"^https?://", re.IGNORECASE)
USER_AGENT = f"think-agents/{__version__} (fetch tool)"
logger = logging.getLogger("think.fetch")


class SpillOps(Protocol):
    """What spilling a body to a workspace needs (a `think.workspace.Workspace` has it)."""

    async def write_file(self, path: str, content: str | bytes, *, mime_type: str | None = None) -> None: ...


@dataclass(frozen=True)
class FetchConfig:
    max_bytes: int
    max_model_chars: int
    spill_to_workspace: bool
    workspace: SpillOps | None
    timeout: float
    response: ResponseMode
    follow_redirects: RedirectMode
    model_header_allowlist: frozenset[str]
    default_accept: str
    on_event: Callable[[dict[str, Any]], object] | None


@dataclass
class Target:
    """Where one tool may fetch: its policy, its base URL (targets) and fixed headers."""

    tool: str
    policy: UrlPolicy
    base_url: httpx.URL | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    _client: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient] | None = None

    def client(self, config: FetchConfig) -> httpx.AsyncClient:
        """One pooled client per event loop (a client's connections belong to the loop that made
        them). Its transport re-checks every rule but, in `same-origin` mode, the allowlist (a
        same-origin redirect need not be allowlisted there)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client[0] is not loop:
            client = self.policy.client(timeout=config.timeout,
                                        check_allowlist=config.follow_redirects != "same-origin")
            del client.headers["accept"]  # only the Accept the rules choose is sent
            client.headers["user-agent"] = USER_AGENT
            self._client = loop, client
        return self._client[1]


def failure(code: ErrorCode, message: str, *, status: int | None = None, final_url: str | None = None) -> FetchResult:
    out: FetchResult = {"ok": False, "code": code, "message": message}
    if status is not None:
        out["status"] = status
    if final_url is not None:
        out["final_url"] = final_url
    return out


async def run_fetch(target: Target, config: FetchConfig, requested: str, *, response: ResponseMode | None,
                    headers: Mapping[str, str] | None, workspace: SpillOps | None) -> FetchResult:
    """Fetch `requested` for `target`; emit one event (log line on `think.fetch`, `on_event`)."""
    started = time.perf_counter()
    try:
        result = await _fetch(target, config, requested, response or config.response, headers or {}, workspace)
    except anyio.get_cancelled_exc_class():
        _emit(target, config, requested, failure("aborted", "Request aborted."), started)
        raise
    _emit(target, config, requested, result, started)
    return result


async def _fetch(target: Target, config: FetchConfig, requested: str, mode: ResponseMode,
                 asked: Mapping[str, str], workspace: SpillOps | None) -> FetchResult:
    raw: str | httpx.URL = requested
    if target.base_url is not None and not _ABSOLUTE.match(requested.strip()):
        try:
            raw = target.base_url.join(requested.strip())
        except (httpx.InvalidURL, ValueError, TypeError):
            return failure("disallowed_url", "Invalid path.")
    decision = target.policy.check(raw)
    if not decision or decision.url is None:
        return failure("disallowed_url", decision.reason)
    initial = current = decision.url
    sent = with_default_accept(merge_headers(target.headers, model_headers(asked, config.model_header_allowlist)),
                               config.default_accept)
    client = target.client(config)
    try:
        with anyio.fail_after(config.timeout):
            for _hop in range(MAX_REDIRECTS + 1):
                async with client.stream("GET", current, headers=sent) as res:
                    location = res.headers.get("location")
                    if res.status_code in REDIRECT_STATUSES and location:
                        follow = target.policy.check_redirect(location, current=current, initial=initial,
                                                              mode=config.follow_redirects)
                        if not follow or follow.url is None:
                            return failure("disallowed_redirect", follow.reason, status=res.status_code,
                                           final_url=str(current))
                        if origin_of(follow.url) != origin_of(current):
                            sent = cross_origin_headers(config.default_accept)
                        current = follow.url
                        continue
                    if not 200 <= res.status_code < 300:
                        return failure("non_2xx", f"HTTP {res.status_code}", status=res.status_code,
                                       final_url=str(current))
                    body, capped = await read_capped(res, config.max_bytes)
                    return await _finish(res, body, capped, str(current), mode, config, workspace)
            return failure("request_failed", "Too many redirects.", final_url=str(current))
    except TimeoutError:
        return failure("timeout", "Request timed out.", final_url=str(current))
    except BlockedRequest as exc:
        code: ErrorCode = "disallowed_redirect" if current != initial else "disallowed_url"
        return failure(code, str(exc), final_url=str(current))
    except (httpx.HTTPError, OSError) as exc:
        return failure("request_failed", str(exc) or type(exc).__name__, final_url=str(current))


def _decode(body: bytes, res: httpx.Response) -> str:
    encoding = res.charset_encoding or "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        encoding = "utf-8"
    return body.decode(encoding, errors="replace")


def _mode_for(mode: ResponseMode, kind: str, config: FetchConfig,
              workspace: SpillOps | None) -> Literal["text", "json", "workspace", "unsupported"]:
    if mode != "auto":
        return mode
    if is_json(kind):
        return "json"
    if is_textual(kind):
        return "text"
    if config.spill_to_workspace and workspace is not None:
        return "workspace"
    return "unsupported"


async def _finish(res: httpx.Response, body: bytes, capped: bool, final_url: str, mode: ResponseMode,
                  config: FetchConfig, workspace: SpillOps | None) -> FetchResult:
    kind = media_type(res.headers.get("content-type"))
    resolved = _mode_for(mode, kind, config, workspace)
    ok: FetchResult = {"ok": True, "status": res.status_code, "final_url": final_url, "content_type": kind,
                       "bytes": len(body), "truncated": capped}
    if not body and resolved != "workspace":
        return {**ok, "truncated": False, "response": "text", "body": ""}
    if resolved == "unsupported":
        return failure("unsupported_content_type",
                       f'Unsupported content type: {kind or "unknown"}. Use response: "workspace" to store it.',
                       final_url=final_url)
    if resolved == "workspace":
        return await _spill(ok, body, kind, workspace)
    if resolved == "json":
        if capped:
            return failure("too_large", f"Response exceeded the {config.max_bytes} byte cap and cannot be parsed "
                           'as JSON. Use response: "workspace".', final_url=final_url)
        try:
            return {**ok, "response": "json", "json": orjson.loads(body)}
        except orjson.JSONDecodeError:
            return failure("invalid_json", "Response body is not valid JSON.", final_url=final_url)
    text = _decode(body, res)
    converted = kind in HTML_TYPES
    cut_html = False
    if converted:  # CPU-bound: off the event loop, and no more of the page than the model could see
        limit = HTML_CHARS_PER_MODEL_CHAR * config.max_model_chars
        text, cut_html = await anyio.to_thread.run_sync(functools.partial(
            html_to_markdown, text, base_url=final_url, max_html_chars=limit))
    text, cut = truncate(text, config.max_model_chars)
    return {**ok, "truncated": capped or cut or cut_html, "response": "text",
            "body": wrap_untrusted(text, url=final_url, content_type=kind, converted=converted)}


async def _spill(ok: FetchResult, body: bytes, kind: str, workspace: SpillOps | None) -> FetchResult:
    if workspace is None:
        return failure("unsupported_content_type",
                       'response: "workspace" requires a workspace, but none is configured.', final_url=ok["final_url"])
    path = f"/fetched/{int(time.time() * 1000)}-{secrets.token_hex(4)}.{extension_for(kind)}"
    try:
        await workspace.write_file(path, body, mime_type=kind or None)
    except Exception as exc:  # a quota, a full disk: the model is told, the turn goes on
        return failure("request_failed", f"Failed to write workspace file: {exc}", final_url=ok["final_url"])
    return {**ok, "response": "workspace", "path": path}


def _loggable(url: str) -> str:
    """A URL without its query and fragment (they may carry keys)."""
    return re.sub(r"[?#].*$", "?…", url, flags=re.DOTALL) if re.search(r"[?#]", url) else url


def _emit(target: Target, config: FetchConfig, requested: str, result: FetchResult, started: float) -> None:
    event: dict[str, Any] = {"tool": target.tool, "ok": result["ok"], "requested_url": requested,
                             "duration": round(time.perf_counter() - started, 6)}
    for key in ("final_url", "status", "bytes", "truncated", "response", "code"):
        if key in result:
            event[key] = result[key]
    outcome = (f"{result['status']} {result['response']} {result['bytes']} bytes" if result["ok"]
               else f"refused: {result['code']}" if result["code"].startswith("disallowed") else result["code"])
    logger.info("%s %s → %s", target.tool, _loggable(requested), outcome,
                extra={"think": {**event, "requested_url": _loggable(requested),
                                 **({"final_url": _loggable(result["final_url"])} if "final_url" in result else {})}})
    if config.on_event is not None:
        try:
            config.on_event(event)
        except Exception:  # observability never breaks a tool call
            logger.exception("fetch on_event hook failed")
