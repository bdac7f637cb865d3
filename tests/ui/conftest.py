"""Fixtures for the chat page tests: the system Chromium, a Node driver, and a live server.

The driver (`drive.mjs`, playwright-core from npm) runs the page in the Debian `chromium`; no
browser is ever downloaded. `node_modules` here is installed with `npm ci` from the committed
lock file when it is missing or stale. A missing Node, npm or Chromium skips them with the reason
(and fails them under CI, see `tests.system_tools`); a missing built page always fails them.
"""

from __future__ import annotations

import inspect
import json
import os
import socket
import subprocess
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp

from tests.npm import ensure_npm_packages
from tests.system_tools import need
from think import __version__
from think.runtime.agent import Agent
from think.server import create_app
from think.server.websocket import WebSocketProtocol
from think.web import DIST, web_routes

HERE = Path(__file__).parent
DRIVER = HERE / "drive.mjs"
CHROMIUM = Path(os.environ.get("THINK_TEST_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = Path(os.environ.get("THINK_UI_SCREENSHOTS", Path(tempfile.gettempdir()) / "think-ui"))


def _tool(name: str) -> str:
    return need(name, purpose="the chat page tests")


@dataclass
class Run:
    """What one driver run saw: collected values, WebSocket frames, socket URLs, requests."""

    values: dict[str, Any]
    sent: list[dict[str, Any]]
    received: list[dict[str, Any]]
    sockets: list[str]
    requests: list[str]
    console: list[str] = field(default_factory=list)
    open: list[str] = field(default_factory=list)
    """The sockets still open when the steps had run."""

    def sent_of(self, kind: str) -> list[dict[str, Any]]:
        return [frame for frame in self.sent if frame.get("type") == kind]


@dataclass
class Browser:
    node: str

    def run(self, url: str, steps: Sequence[dict[str, Any]], **plan: Any) -> Run:
        """Run `steps` (see drive.mjs) in a fresh headless Chromium profile; fail the test on error."""
        payload = json.dumps({"chromium": str(CHROMIUM), "url": url, "steps": list(steps), **plan})
        proc = subprocess.run([self.node, str(DRIVER), payload], cwd=HERE, capture_output=True, text=True,
                              timeout=180, check=False)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if not lines:
            pytest.fail(f"the browser driver printed no result (exit {proc.returncode}):\n"
                        f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}", pytrace=False)
        result = json.loads(lines[-1])
        if not result["ok"]:
            step = result["step"]
            pytest.fail(
                f"browser step {step} {json.dumps(steps[step]) if 0 <= step < len(steps) else ''} failed:\n"
                f"{result['error']}\n\nconsole:\n" + "\n".join(result["console"][-30:])
                + "\n\nframes sent (last 8):\n"
                + "\n".join(json.dumps(f)[:300] for f in result["frames"]["sent"][-8:])
                + "\n\nframes received (last 15):\n"
                + "\n".join(json.dumps(f)[:300] for f in result["frames"]["received"][-15:])
                + "\n\nthe conversation's markup:\n" + str(result.get("dom", "")),
                pytrace=False,
            )
        return Run(values=result["values"], sent=result["frames"]["sent"], received=result["frames"]["received"],
                   sockets=result["sockets"], requests=result["requests"], console=result["console"],
                   open=result.get("open", []))


@pytest.fixture(scope="session")
def browser() -> Browser:
    """The driver, with `npm ci` run in tests/ui when its node_modules is missing or stale."""
    node = _tool("node")
    need("chromium", path=CHROMIUM, purpose="the chat page tests")
    if not (DIST / "index.html").exists():
        pytest.fail("think/web/dist is missing: build the page with `cd web && npm ci && npm run build`",
                    pytrace=False)
    ensure_npm_packages(HERE, purpose="the chat page tests")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return Browser(node)


def ui_app(agents: Sequence[type[Agent]], data_dir: Path, *, model: str = "scripted") -> ASGIApp:
    """`create_app(..., ui=True)` where the server has it, else the same composed by hand."""
    if "ui" in inspect.signature(create_app).parameters:
        return create_app(agents, data_dir=data_dir, ui=True)  # type: ignore[call-arg]
    inner = create_app(agents, data_dir=data_dir)

    def info() -> dict[str, Any]:
        return {"agents": [cls.kebab_name() for cls in agents], "model": model, "demo": False,
                "version": __version__, "prefix": "agents"}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with inner.router.lifespan_context(inner):
            yield

    return Starlette(routes=[*web_routes(info), Mount("/", app=inner)], lifespan=lifespan)


@contextmanager
def live_server(app: ASGIApp) -> Iterator[str]:
    """Serve `app` with uvicorn on 127.0.0.1 (a random port) in a thread; yield its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, lifespan="on", log_level="warning", ws=WebSocketProtocol))
    failure: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # reported when the block ends
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"uvicorn-ui:{port}", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
    assert not thread.is_alive(), "the server did not stop within 15 s"
    if failure:
        raise failure[0]


@pytest.fixture
def serve(tmp_path: Path) -> Callable[..., Any]:
    """`with serve([AgentClass]) as url:` runs a live server with the page, data in tmp_path."""

    def start(agents: Sequence[type[Agent]], **options: Any) -> Any:
        return live_server(ui_app(agents, tmp_path / "data", **options))

    return start
