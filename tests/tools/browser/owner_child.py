"""A process that launches browser tools' own Chromium, prints its pid and profile directory,
then waits to be killed (or, given `exit`, ends without closing the tools)."""

from __future__ import annotations

import asyncio
import sys

from think.tools.browser import create_browser_tools


async def main() -> None:
    tools = create_browser_tools(allowlist=["**"], executable=sys.argv[1])
    await tools.browser.link()
    chromium = tools.browser.chromium
    assert chromium is not None
    print(chromium.pid, chromium.profile, flush=True)
    if sys.argv[2:] != ["exit"]:
        await asyncio.Event().wait()


asyncio.run(main())
