"""The official AG-UI client under Node, for the AG-UI tests: `node`, installed, and a driver.

`agui_node/node_modules` is installed with `npm ci --ignore-scripts` from the committed lock file
when it is missing or does not match the pins in package.json (`.ci/run` installs it too). A
missing Node or npm skips the tests with the reason, and fails them under CI (`tests.system_tools`).
`drive.mjs <scenario> <url>` runs one scenario with `@ag-ui/client`'s `HttpAgent`; it prints a JSON
line per event as it arrives and, last, `{"result": …}`.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.npm import ensure_npm_packages
from tests.system_tools import need

HERE = Path(__file__).parent / "agui_node"
DRIVER = HERE / "drive.mjs"
RUN_TIMEOUT = 60


@pytest.fixture(scope="session", name="agui_node")
def agui_node_fixture() -> str:
    """The `node` binary, with the AG-UI client installed from the lock file."""
    node = need("node", purpose="the AG-UI client tests (Node.js 20+)")
    ensure_npm_packages(HERE, purpose="the AG-UI client tests (npm)")
    return node


class Drive:
    """One running `drive.mjs`: its event lines as they come, then its result."""

    def __init__(self, node: str, scenario: str, url: str, *, prompt: str | None = None) -> None:
        env = {**os.environ, **({"PROMPT": prompt} if prompt is not None else {})}
        self.proc = subprocess.Popen([node, str(DRIVER), scenario, url], cwd=HERE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.seen: list[dict[str, Any]] = []

    def lines(self) -> Iterator[dict[str, Any]]:
        """Event lines until the result line (kept in `self.result`)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.startswith("{"):
                continue
            data = json.loads(line)
            if "result" in data:
                self.result: dict[str, Any] = data["result"]
                return
            self.seen.append(data)
            yield data

    def wait_for(self, kind: str, count: int = 1) -> None:
        """Read event lines until `count` events of type `kind` have arrived."""
        for _ in self.lines():
            if sum(1 for e in self.seen if e["event"] == kind) >= count:
                return
        pytest.fail(f"drive.mjs ended before {count} {kind} events: {self.seen}\n{self.stderr()}", pytrace=False)

    def finish(self) -> dict[str, Any]:
        for _ in self.lines():
            pass
        self.proc.wait(timeout=RUN_TIMEOUT)
        if not hasattr(self, "result"):
            pytest.fail(f"drive.mjs printed no result (exit {self.proc.returncode}):\n{self.stderr()}", pytrace=False)
        return self.result

    def stderr(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        return self.proc.stderr.read()[-4000:] if self.proc.stderr is not None else ""

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def drive(node: str, scenario: str, url: str) -> dict[str, Any]:
    """Run one scenario to its end; its result."""
    run = Drive(node, scenario, url)
    try:
        return run.finish()
    finally:
        run.close()
