"""Browser tool figures: `browser_markdown` cold (launch Chromium, open a page, navigate, convert)
and warm (the browser running: a fresh one-shot browser context per call), p50.

The page is the fetch bench's generated article, served by uvicorn on 127.0.0.1 in its own
process; every request the page makes goes through the URL policy and our HTTP client (Fetch
interception), as in production.

    python bench/browser.py [--cold 3] [--warm 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.fetch import serve  # noqa: E402
from think.tools import ToolContext  # noqa: E402
from think.tools.browser import BrowserTools, create_browser_tools  # noqa: E402


async def once(tools: BrowserTools, url: str) -> float:
    tool = tools["browser_markdown"]
    assert tool.execute is not None
    start = time.perf_counter()
    result = await tool.execute(tool.check_input({"url": url}), ToolContext(tool_call_id="b", tool_name=tool.name))
    elapsed = time.perf_counter() - start
    assert isinstance(result, dict) and result["ok"], result
    return elapsed


def tools_for(port: int) -> BrowserTools:
    return create_browser_tools(allowlist=[f"http://127.0.0.1:{port}/**"], allow_private_networks=["127.0.0.1/32"])


async def bench(port: int, cold_runs: int, warm_runs: int) -> tuple[list[float], list[float]]:
    url = f"http://127.0.0.1:{port}/page.html"
    cold: list[float] = []
    for _ in range(cold_runs):
        tools = tools_for(port)
        try:
            cold.append(await once(tools, url))
        finally:
            await tools.close()
    tools = tools_for(port)
    try:
        await once(tools, url)
        warm = [await once(tools, url) for _ in range(warm_runs)]
    finally:
        await tools.close()
    return cold, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cold", type=int, default=3)
    parser.add_argument("--warm", type=int, default=30)
    args = parser.parse_args()
    server, port = serve()
    try:
        cold, warm = anyio.run(bench, port, args.cold, args.warm)
    finally:
        server.kill()
        server.wait(10)
    print(f"browser_markdown cold (launch + navigate): p50 {statistics.median(cold) * 1000:7.1f} ms ({len(cold)} runs)")
    print(f"browser_markdown warm (one-shot context):  p50 {statistics.median(warm) * 1000:7.1f} ms ({len(warm)} runs)")


if __name__ == "__main__":
    main()
