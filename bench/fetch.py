"""Fetch tool figures: its overhead over a bare httpx GET to the same local server, and the cost
of turning HTML into markdown.

The server is uvicorn on 127.0.0.1 serving a small JSON document and a generated article page.
`bare` is a reused `httpx.AsyncClient` GET; `policy client` is the same GET through
`UrlPolicy.client()` (request check, lookup, address check, pinned connection); `fetch_url` is a
whole tool call (URL policy, header rules, capped read, JSON parse, result dict, event and log
line). Samples are interleaved, so load on the machine hits all three alike.

    python bench/fetch.py [--runs 300]

Target: fetch_url at most 1 ms over the bare GET (median). If `trafilatura` is importable its
markdown extraction is timed beside markdownify for comparison (it is not a dependency).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from think.net import UrlPolicy  # noqa: E402
from think.tools import ToolContext  # noqa: E402
from think.tools.fetch import create_fetch_tools  # noqa: E402
from think.tools.fetch.content import html_to_markdown  # noqa: E402

TARGET_MS = 1.0
DATA = b'{"station": "Brest", "tides": [{"at": "06:12", "height": 4.1}, {"at": "18:40", "height": 4.3}]}'


def article(sections: int) -> str:
    parts = ["<!doctype html><html><head><title>Tides</title><style>p{margin:0}</style>",
             "<script>window.analytics = {};</script></head><body><nav><a href='/'>Home</a></nav><main>"]
    for i in range(sections):
        parts.append(f"<h2>Section {i}</h2><p>The <b>tide</b> at station {i} rises twice a day; see "
                     f"<a href='/s/{i}'>the table</a> and <em>notes</em> for details of the harbour.</p>"
                     f"<ul><li>High water {i % 12:02}:12</li><li>Low water {(i + 6) % 12:02}:30</li></ul>"
                     "<table><tr><th>Day</th><th>Height</th></tr><tr><td>Mon</td><td>4.1 m</td></tr></table>")
    parts.append("</main><footer>© tides</footer></body></html>")
    return "".join(parts)


PAGE = article(120)


def app() -> Starlette:
    async def data(request: Any) -> Response:
        return Response(DATA, media_type="application/json")

    async def page(request: Any) -> Response:
        return Response(PAGE, media_type="text/html")

    return Starlette(routes=[Route("/data.json", data), Route("/page.html", page)])


def serve() -> tuple[subprocess.Popen[bytes], int]:
    """The server in its own process (in a thread it would share this one's GIL)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    code = ("import sys, socket, uvicorn; sys.path.insert(0, sys.argv[1]); from bench.fetch import app; "
            "uvicorn.Server(uvicorn.Config(app(), loop='asyncio', http='h11', lifespan='off', log_level='warning'))"
            ".run(sockets=[socket.socket(fileno=int(sys.argv[2]))])")
    process = subprocess.Popen([sys.executable, "-c", code, str(ROOT), str(sock.fileno())], pass_fds=(sock.fileno(),))
    port = int(sock.getsockname()[1])
    sock.close()
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/data.json", timeout=1).raise_for_status()
            return process, port
        except httpx.HTTPError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("the server did not start") from None
            time.sleep(0.05)


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def bench_overhead(port: int, runs: int) -> dict[str, float]:
    url = f"http://127.0.0.1:{port}/data.json"
    tools = create_fetch_tools([f"http://127.0.0.1:{port}/**"], allow_private_networks=["127.0.0.1/32"])
    fetch_url = tools["fetch_url"]
    assert fetch_url.execute is not None
    ctx = ToolContext(tool_call_id="b", tool_name="fetch_url")
    samples: dict[str, list[float]] = {"bare": [], "policy client": [], "fetch_url": []}
    async with httpx.AsyncClient() as bare, UrlPolicy(allow_private_networks=["127.0.0.1/32"]).client() as guarded:

        async def plain() -> None:
            (await bare.get(url)).json()

        async def policed() -> None:
            (await guarded.get(url)).json()

        async def tool_call() -> None:
            result = await fetch_url.execute(fetch_url.check_input({"url": url}), ctx)  # type: ignore[misc]
            assert result["ok"], result

        for fn in (plain, policed, tool_call):  # warm the pools
            await fn()
        for _ in range(runs):
            samples["bare"].append(await timed(plain))
            samples["policy client"].append(await timed(policed))
            samples["fetch_url"].append(await timed(tool_call))
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def bench_markdown(runs: int) -> dict[str, float]:
    kb = len(PAGE.encode()) / 1024
    out: dict[str, float] = {}
    converters: dict[str, Callable[[str], Any]] = {"markdownify": html_to_markdown}
    try:
        import trafilatura  # type: ignore[import-not-found,unused-ignore]

        converters["trafilatura"] = lambda html: trafilatura.extract(html, output_format="markdown",
                                                                     include_links=True, include_tables=True)
    except ImportError:
        pass
    for name, convert in converters.items():
        convert(PAGE)
        samples = []
        for _ in range(max(5, runs // 10)):
            start = time.perf_counter()
            convert(PAGE)
            samples.append(time.perf_counter() - start)
        out[name] = statistics.median(samples) * 1e6 / kb
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    server, port = serve()
    try:
        medians = anyio.run(bench_overhead, port, args.runs)
    finally:
        server.kill()
        server.wait(10)
    for name, ms in medians.items():
        print(f"{name:>14}: median {ms:6.3f} ms per GET ({args.runs} runs)")
    added = medians["fetch_url"] - medians["bare"]
    print(f"fetch_url overhead: {added:+.3f} ms (policy client {medians['policy client'] - medians['bare']:+.3f} ms)"
          f"   target ≤ {TARGET_MS:.1f} ms: {'ok' if added <= TARGET_MS else 'MISSED'}")
    kb = len(PAGE.encode()) / 1024
    for name, us in bench_markdown(args.runs).items():
        print(f"HTML → markdown ({name}): {us:7.1f} µs per KB  ({kb:.0f} KB page)")


if __name__ == "__main__":
    main()
