"""The chat web UI: the built page, its assets, and the small info endpoint it reads.

    app = Starlette(routes=[*web_routes(lambda: {"agents": ["assistant"], "model": "demo", ...}),
                            Mount("/", app=create_app(...))])

The page (sources in `web/`, built with Vite into `think/web/dist`) uses the unmodified
`useAgent` and `useAgentChat` hooks, so it needs nothing from the server beyond what those hooks
need (`GET /<prefix>/<agent>/<name>/get-messages` and the WebSocket on the same path), plus
`GET /_think/info`:

    {"agents": ["assistant", ...], "model": "openai:gpt-4.1-mini", "demo": false,
     "version": "0.1.0", "prefix": "agents", "browse": true,
     "welcome": {"assistant": null}, "suggestions": {"assistant": ["What is 12*(3+4)?"]}}

`agents` are the kebab-case class names the page may open (the first is the default), `prefix`
the first path segment of agent URLs, `demo` says the model is the offline demo model, and
`browse` that the server lists its conversations at `_think/agents` (the sidebar then shows them),
`welcome` and `suggestions` each agent's `Think.welcome` text and `Think.suggestions`. The
page loads its assets and the info with relative URLs, so the routes work under a mount prefix.
"""

from __future__ import annotations

import inspect
import mimetypes
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import PathLike, StaticFiles
from starlette.types import Scope

__all__ = ["DIST", "ui_built", "web_routes"]

DIST = Path(__file__).parent / "dist"
"""The built page: `index.html` and `assets/` (hashed file names)."""

InfoFunction = Callable[[], dict[str, Any] | Awaitable[dict[str, Any]]]

# The page builds elements from text and never injects HTML; this is defence in depth on top.
# Agent sockets are on the same host, but CSP's 'self' does not cover ws: in every browser.
_PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: blob: https:; font-src 'self' data:; connect-src 'self' ws: wss:; "
        "object-src 'none'; base-uri 'self'; form-action 'self'"
    ),
}
_IMMUTABLE = "public, max-age=31536000, immutable"

_MISSING_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>think: web UI not built</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.6 system-ui,sans-serif;max-width:40rem;margin:12vh auto;padding:0 1.5rem;color:#222}
code,pre{font:14px ui-monospace,monospace;background:#f2f1ec;border-radius:6px}code{padding:.1em .35em}
pre{padding:.8rem 1rem}@media(prefers-color-scheme:dark){body{background:#161618;color:#e8e6e3}
code,pre{background:#222226}}</style></head>
<body><h1>The chat UI is not built</h1>
<p>This copy of <code>think</code> has no <code>think/web/dist</code> folder. Released wheels include
it; in a source checkout, build it once with Node 20 or newer:</p>
<pre>cd web
npm ci
npm run build</pre>
<p>The agents themselves work without it: WebSocket clients can connect to
<code>/agents/&lt;agent&gt;/&lt;name&gt;</code> as usual.</p></body></html>
"""


def ui_built() -> bool:
    """Whether the built page is present (it is in wheels; a source checkout must build it)."""
    return (DIST / "index.html").is_file()


_ENCODINGS = (("br", ".br"), ("gzip", ".gz"))
"""The precompressed forms the build writes beside each text asset, best first."""


def _accepted(scope: Scope) -> set[str]:
    """The content codings the request accepts (`Accept-Encoding`, q=0 meaning refused)."""
    header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"accept-encoding"), "")
    accepted = set()
    for item in header.split(","):
        coding, _, params = item.strip().partition(";")
        q = params.strip().removeprefix("q=") if params.strip().startswith("q=") else "1"
        try:
            if float(q) > 0:
                accepted.add(coding.strip().lower())
        except ValueError:
            continue
    return accepted


class _ImmutableFiles(StaticFiles):
    """Hashed assets never change under one name, so browsers may keep them for a year; text
    assets are sent in the smallest precompressed form the browser accepts (built by Vite)."""

    def file_response(
        self, full_path: PathLike, stat_result: os.stat_result, scope: Scope, status_code: int = 200
    ) -> Response:
        path = Path(full_path)
        accepted = _accepted(scope)
        for coding, suffix in _ENCODINGS:
            variant = path.with_name(path.name + suffix)
            if (coding in accepted or "*" in accepted) and variant.is_file():
                response = super().file_response(variant, variant.stat(), scope, status_code)
                response.headers["Content-Encoding"] = coding
                response.headers["Content-Type"] = _media_type(path)
                break
        else:
            response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["Cache-Control"] = _IMMUTABLE
        response.headers["Vary"] = "Accept-Encoding"
        return response


def _media_type(path: Path) -> str:
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"{kind}; charset=utf-8" if kind.startswith("text/") or kind.endswith(("javascript", "json")) else kind


async def _missing_asset(request: Request) -> Response:
    return PlainTextResponse("The web UI is not built (think/web/dist is missing).", status_code=404)


def web_routes(info: InfoFunction) -> list[BaseRoute]:
    """Routes for the chat page: `/`, `/assets/...` and `GET /_think/info`.

    `info` is called for every info request, so it may reflect configuration that changes (for
    example the model). It may be a plain or an async function. When the page is not built,
    `/` answers 503 with instructions instead of failing at start-up.
    """

    async def index(request: Request) -> Response:
        page = DIST / "index.html"
        try:
            html = page.read_text(encoding="utf-8")
        except FileNotFoundError:
            return HTMLResponse(_MISSING_PAGE, status_code=503, headers={"Cache-Control": "no-store"})
        return HTMLResponse(html, headers=_PAGE_HEADERS)

    async def server_info(request: Request) -> Response:
        result = info()
        if inspect.isawaitable(result):
            result = await result
        return JSONResponse(result, headers={"Cache-Control": "no-store"})

    assets: BaseRoute
    if (DIST / "assets").is_dir():
        assets = Mount("/assets", app=_ImmutableFiles(directory=DIST / "assets"), name="think-assets")
    else:
        assets = Route("/assets/{path:path}", _missing_asset, methods=["GET", "HEAD"])

    return [
        Route("/", index, methods=["GET", "HEAD"], name="think-ui"),
        Route("/index.html", index, methods=["GET", "HEAD"]),
        Route("/_think/info", server_info, methods=["GET"], name="think-info"),
        assets,
    ]
