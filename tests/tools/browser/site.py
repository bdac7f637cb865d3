"""The browser test site: the fetch test site (`tests.net.site`) plus pages that need a browser —
script-rendered content, subresources, frames and navigations to blocked hosts, cookies, a page
whose script never ends. `/secret` is the page a blocked request would reach if the policy leaked
(`localhost` is the same server): tests assert it is never requested.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.chat.live_server import serve_in_thread
from tests.net.site import Site

APP = """<!doctype html><html><head><title>Rendered</title></head><body>
<h1>Harbour</h1><div id="app">loading</div><p id="tide">pending</p>
<img src="/image.png" alt="chart">
<script>
document.getElementById('app').innerHTML = '<h2>Rendered by script</h2><p>Berth <b>7</b> is free.</p>';
fetch('/data.json').then(r => r.json())
  .then(d => { document.getElementById('tide').textContent = 'Station ' + d.station; });
</script></body></html>"""
TABLE = """<!doctype html><html><head><title>Boats</title></head><body>
<table id="boats"><tr><th>Name</th><th>Length</th></tr>
<tr class="boat" data-id="b1"><td>Albatross</td><td>12 m</td></tr>
<tr class="boat" data-id="b2"><td>Petrel</td><td>9 m</td></tr></table>
<p><a href="/app.html">App</a> <a href="https://example.org/about">About</a> <a href="#top">Top</a>
<a href="mailto:x@example.org">Mail</a> <a href="/app.html">App again</a></p></body></html>"""


class BrowserSite(Site):
    def app(self) -> Starlette:
        app = super().app()

        async def record(request: Request) -> None:
            self.requests.append((request.url.path, {k.lower(): v for k, v in request.headers.items()}))

        async def html(request: Request) -> Response:
            await record(request)
            pages = {"/app.html": APP, "/table.html": TABLE, "/busy.html": BUSY, "/nav.html": NAV}
            return HTMLResponse(pages[request.url.path].replace("{blocked}", self.blocked_origin))

        async def framed(request: Request) -> Response:  # a frame and an image from a blocked host
            await record(request)
            return HTMLResponse(f"""<!doctype html><html><head><title>Framed</title></head><body><h1>Outer</h1>
<iframe src="{self.blocked_origin}/secret"></iframe><img src="{self.blocked_origin}/secret?img">
</body></html>""")

        async def secret(request: Request) -> Response:
            await record(request)
            return PlainTextResponse("the secret")

        async def cookie(request: Request) -> Response:
            await record(request)
            response = HTMLResponse(f"<html><body><p id='c'>{request.cookies.get('visit', 'none')}</p></body></html>")
            if "set" in request.query_params:
                response.set_cookie("visit", request.query_params["set"])
            return response

        app.router.routes.extend([Route(p, html) for p in ("/app.html", "/table.html", "/busy.html", "/nav.html")])
        app.router.routes.extend([Route("/framed.html", framed), Route("/secret", secret), Route("/cookie", cookie)])
        return app

    @property
    def blocked_origin(self) -> str:
        """The same server under a name the policy refuses (`localhost`)."""
        return f"{self.scheme}://localhost:{self.port}"


BUSY = "<!doctype html><html><head><title>Busy</title><script>for (;;) {}</script></head><body>never</body></html>"
NAV = """<!doctype html><html><head><title>Nav</title></head><body><p>Going away</p>
<script>setTimeout(() => { location.href = '{blocked}/secret?nav'; }, 0);</script></body></html>"""


@contextmanager
def serve_browser_site() -> Iterator[BrowserSite]:
    site = BrowserSite()
    with serve_in_thread(site.app(), lifespan="off", http="h11") as live:
        site.port = live.port
        yield site
