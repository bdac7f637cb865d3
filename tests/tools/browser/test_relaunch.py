"""An owned browser: launched on first use, relaunched after it is SIGKILLed, killed with its
Python process; a hung page (a server that never answers, a script that never ends) times out."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.tools.browser.conftest import chromium_binary
from tests.tools.browser.helpers import LOCAL, attached, call, eventually
from tests.tools.browser.site import BrowserSite
from think.tools.browser import create_browser_tools
from think.tools.browser.process import Chromium


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not status.exists() or status.read_text().split(") ", 1)[1][0] != "Z"


async def test_a_killed_browser_is_relaunched(site: BrowserSite) -> None:
    tools = create_browser_tools(executable=chromium_binary(), allowlist=["**"], allow_private_networks=LOCAL,
                                 session="dynamic", timeout=20)
    try:
        kept = await call(tools, "browser_markdown", url=site.url("/table.html"), keep=True)
        assert kept["ok"] is True and tools.browser.launches == 1
        first = tools.browser.pid
        assert first is not None
        profile = tools.browser.chromium.profile if tools.browser.chromium else ""
        os.kill(first, signal.SIGKILL)
        await eventually(lambda: not alive(first))
        again = await call(tools, "browser_markdown", url=site.url("/app.html"))
        assert again["ok"] is True and "Rendered by script" in again["markdown"], again
        assert tools.browser.launches == 2 and tools.browser.pid not in (None, first)
        assert not Path(profile).exists()  # noqa: ASYNC240 - the dead browser's profile was removed
        lost = await call(tools, "browser_markdown", url=site.url("/table.html"), session_id=kept["session_id"])
        assert lost["ok"] is False and lost["code"] == "session_gone"
    finally:
        await tools.close()
    assert tools.browser.pid is None


def owner(*args: str) -> tuple[subprocess.Popen[bytes], int, str]:
    """A Python process that owns a browser: (process, browser pid, profile directory)."""
    command = [sys.executable, "-m", "tests.tools.browser.owner_child", chromium_binary(), *args]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert child.stdout is not None
    pid, profile = child.stdout.readline().decode().split()
    return child, int(pid), profile


async def test_the_browser_dies_with_its_python_process() -> None:
    child, pid, _profile = owner()
    try:
        assert alive(pid)
        child.kill()  # SIGKILL: no atexit, no cleanup; only the parent-death signal is left
        child.wait()
        await eventually(lambda: not alive(pid), within=30)
    finally:
        child.kill()
        child.wait()


async def test_a_python_process_that_exits_takes_its_browser_and_profile() -> None:
    child, pid, profile = owner("exit")
    try:
        assert child.wait(timeout=60) == 0
        assert not alive(pid)
        assert not Path(profile).exists()  # noqa: ASYNC240 - removed by the atexit hook
    finally:
        child.kill()
        child.wait()


async def test_a_page_that_never_answers_times_out(chromium: Chromium, site: BrowserSite) -> None:
    tools = attached(chromium, timeout=2)
    result = await call(tools, "browser_markdown", url=site.url("/slow"))
    assert result == {"ok": False, "code": "timeout", "message": "The page did not load within 2 s.",
                      "url": site.url("/slow")}
    assert (await call(tools, "browser_links", url=site.url("/table.html")))["ok"] is True


async def test_a_script_that_never_ends_times_out(chromium: Chromium, site: BrowserSite) -> None:
    tools = attached(chromium, timeout=2)
    result = await call(tools, "browser_markdown", url=site.url("/busy.html"))
    assert result["ok"] is False and result["code"] == "timeout"
    spin = await call(tools, "browser_execute", code=f"cdp.navigate('{site.url('/table.html')}')\n"
                      "cdp.evaluate('for (;;) {}')")
    assert spin["ok"] is False and "TimeoutError" in spin["error"]
    assert (await call(tools, "browser_links", url=site.url("/table.html")))["ok"] is True


async def test_launching_does_not_hold_up_the_event_loop() -> None:
    tools = create_browser_tools(executable=chromium_binary(), allowlist=["**"])
    seen: list[str] = []

    async def meanwhile() -> None:  # runs at the loop's next turn: a blocking launch would have finished by then
        await asyncio.sleep(0)
        chromium = tools.browser.chromium
        seen.append("running" if chromium is not None and not chromium.websocket_url else "done")

    try:
        launch = asyncio.create_task(tools.browser.link())
        await asyncio.gather(launch, meanwhile())
        assert seen == ["running"] and tools.browser.pid is not None
    finally:
        await tools.close()
