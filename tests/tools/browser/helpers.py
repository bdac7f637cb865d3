"""Calling browser tools the way the loop does, and tools attached to a test's shared browser."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from think.tools.browser import BrowserTools, create_browser_tools
from think.tools.browser.process import Chromium
from think.tools.tool import ToolContext

LOCAL = ["127.0.0.1/32"]


async def call(tools: BrowserTools, name: str, agent: Any = None, **arguments: Any) -> dict[str, Any]:
    found = tools[name]
    assert found.execute is not None
    result = await found.execute(found.check_input(arguments), ToolContext(tool_call_id="c1", tool_name=name,
                                                                           agent=agent))
    assert isinstance(result, dict)
    return result


def attached(chromium: Chromium, **options: Any) -> BrowserTools:
    """Tools on the shared browser; the site on 127.0.0.1 is reachable, `localhost` is not."""
    options.setdefault("allowlist", ["**"])
    if "policy" in options:
        options.pop("allowlist")
    else:
        options.setdefault("allow_private_networks", LOCAL)
    options.setdefault("timeout", 15)
    return create_browser_tools(cdp_url=chromium.websocket_url, **options)


async def eventually(predicate: Callable[[], object], *, within: float = 30) -> None:
    """Wait until `predicate()` is true (the browser or another process makes it so)."""
    with anyio.fail_after(within):
        while not predicate():  # noqa: ASYNC110 - nothing to wait on but the condition itself
            await anyio.sleep(0.02)
