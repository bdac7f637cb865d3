"""Fixtures for the npm-client conformance tests: Node, the pinned npm packages, a live server.

`node_modules` is installed with `npm ci --ignore-scripts` from the committed lock file when it is
missing or does not match the pins in package.json. A failed install fails the tests loudly; a
missing Node or npm skips them with the reason, and fails them under CI (`tests.system_tools`).

The scenarios all run in ONE Node process (`drive.mjs`, each browser tab a worker thread) against
ONE uvicorn server on 127.0.0.1; every scenario uses its own agent instance. The run happens once
per module and each test asserts on its scenario's part of the result.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from tests.chat.live_server import serve_in_thread
from tests.node.agents import NodeChat
from tests.npm import ensure_npm_packages
from tests.system_tools import need
from think.runtime import EmbeddedRuntime
from think.server import create_app

HERE = Path(__file__).parent
DRIVER = HERE / "drive.mjs"
MIN_NODE = 20
RUN_TIMEOUT = 180


def _tool(name: str) -> str:
    return need(name, purpose=f"the npm client conformance tests (Node.js {MIN_NODE}+ and npm)")


@pytest.fixture(scope="session")
def node() -> str:
    """The `node` binary, with tests/node/node_modules installed from the lock file."""
    node = _tool("node")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < MIN_NODE:
        pytest.fail(f"Node {version} is too old: the npm clients need Node {MIN_NODE}+", pytrace=False)
    ensure_npm_packages(HERE, purpose=f"the npm client conformance tests (Node.js {MIN_NODE}+ and npm)")
    return node


# ---- what the driver reports ------------------------------------------------------------------------


@dataclass
class Frame:
    """One WebSocket frame a tab exchanged: its direction, raw text, parsed JSON and time (epoch ms)."""

    dir: str
    raw: str
    t: float

    @cached_property
    def data(self) -> dict[str, Any]:
        value = json.loads(self.raw)
        assert isinstance(value, dict), self.raw
        return value

    @property
    def type(self) -> str:
        return str(self.data.get("type"))

    @property
    def chunk(self) -> dict[str, Any] | None:
        """The UI message chunk in a `cf_agent_use_chat_response` body (None for empty or plain-text bodies)."""
        body = self.data.get("body")
        if self.type != "cf_agent_use_chat_response" or not body or self.data.get("error"):
            return None
        chunk = json.loads(body)
        assert isinstance(chunk, dict), body
        return chunk


@dataclass
class Socket:
    url: str
    events: list[dict[str, Any]]

    @cached_property
    def frames(self) -> list[Frame]:
        return [Frame(e["dir"], e["data"], e["t"]) for e in self.events if e["dir"] in ("in", "out")]

    @property
    def received(self) -> list[Frame]:
        return [f for f in self.frames if f.dir == "in"]

    @property
    def sent(self) -> list[Frame]:
        return [f for f in self.frames if f.dir == "out"]

    def event_time(self, kind: str) -> float:
        return float(next(e["t"] for e in self.events if e["dir"] == kind))


@dataclass
class TabState:
    """What one tab (useAgent + useAgentChat) ended with, and everything it exchanged."""

    raw: dict[str, Any]

    @property
    def status(self) -> str:
        return str(self.raw["status"])

    @property
    def error(self) -> str | None:
        error = self.raw["error"]
        return None if error is None else str(error)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.raw["messages"])

    def texts(self) -> list[str]:
        return ["".join(p["text"] for p in m["parts"] if p["type"] == "text") for m in self.messages]

    @property
    def turn_ends(self) -> list[dict[str, Any]]:
        return list(self.raw["turnEnds"])

    @property
    def sockets(self) -> list[Socket]:
        return [Socket(s["url"], s["events"]) for s in self.raw["sockets"]]

    @property
    def socket(self) -> Socket:
        (only,) = self.sockets
        return only

    @property
    def http(self) -> list[dict[str, Any]]:
        return list(self.raw["http"])

    @property
    def console(self) -> list[dict[str, str]]:
        return list(self.raw["console"])

    def requests(self) -> list[dict[str, Any]]:
        """The `cf_agent_use_chat_request` frames this tab sent, with `init.body` decoded as `body`."""
        out = []
        for frame in self.socket.sent:
            if frame.type == "cf_agent_use_chat_request":
                out.append({**frame.data, "body": json.loads(frame.data["init"]["body"])})
        return out

    def turn(self, request_id: str) -> list[Frame]:
        """The response frames of one request, in arrival order."""
        return [f for f in self.socket.received
                if f.type == "cf_agent_use_chat_response" and f.data["id"] == request_id]


@dataclass
class Scenario:
    name: str
    result: dict[str, Any]

    def tab(self, label: str) -> TabState:
        return TabState(self.result[label])

    def tabs(self) -> list[TabState]:
        return [TabState(v) for v in self.result.values() if isinstance(v, dict) and "sockets" in v]


@dataclass
class NodeRun:
    node_version: str
    scenarios: dict[str, dict[str, Any]]
    stderr: str
    base_url: str = ""
    """The live server the scenarios ran against (still up while the module's tests run)."""

    def scenario(self, name: str) -> Scenario:
        outcome = self.scenarios[name]
        if not outcome["ok"]:
            state = json.dumps(outcome.get("state"), indent=1)[-6000:]
            pytest.fail(f"npm scenario {name!r} failed:\n{outcome['error']}\n\nthe tab's state:\n{state}\n\n"
                        f"driver stderr (tail):\n{self.stderr[-3000:]}", pytrace=False)
        return Scenario(name, outcome["result"])


def run_driver(node: str, host: str, *, only: list[str] | None = None, run: str | None = None,
               **extra: Any) -> NodeRun:
    """Run drive.mjs (`only` these scenarios; `run` names their rooms, so a later run can reopen
    them; `extra` goes into the plan the scenarios read)."""
    plan: dict[str, Any] = {"host": host, "agent": NodeChat.__name__, "run": run or secrets.token_hex(3), **extra}
    if only:
        plan["only"] = only
    env = {**os.environ, "NODE_ENV": "production"}
    proc = subprocess.run([node, str(DRIVER), json.dumps(plan)], cwd=HERE, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, check=False, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        pytest.fail(f"drive.mjs failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}",
                    pytrace=False)
    result = json.loads(lines[-1])
    return NodeRun(result["node"], result["scenarios"], proc.stderr)


@pytest.fixture(scope="module")
def npm_run(node: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeRun]:
    """Every scenario of drive.mjs, run once against a live server serving `NodeChat`."""
    data = tmp_path_factory.mktemp("node-data")
    app = create_app([NodeChat], runtime=EmbeddedRuntime(data, idle_timeout=60))
    with serve_in_thread(app) as live:
        run = run_driver(node, f"127.0.0.1:{live.port}")
        run.base_url = live.base_url
        yield run
