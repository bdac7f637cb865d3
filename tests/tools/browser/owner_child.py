"""A process that launches browser tools' own Chromium, prints its pid, then waits to be killed."""

from __future__ import annotations

import asyncio
import sys

from think.tools.browser import create_browser_tools


async def main() -> None:
    tools = create_browser_tools(allowlist=["**"], executable=sys.argv[1])
    await tools.browser.link()
    print(tools.browser.pid, flush=True)
    await asyncio.Event().wait()


asyncio.run(main())
