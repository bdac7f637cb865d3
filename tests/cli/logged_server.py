"""A real `think serve` subprocess whose stderr (its log) goes to a file the test reads."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio

from tests.submissions.server_process import ROOT, ServerProcess

GUARD = 30.0
"""Seconds a wait for a log line may take before the test fails."""


class LoggedServer(ServerProcess):
    """A `ServerProcess` whose log lines can be waited for."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        super().__init__(process, port)
        self.log = log

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def lines(self, containing: str) -> list[str]:
        return [line for line in self.text().splitlines() if containing in line]

    async def wait_line(self, containing: str, *, count: int = 1, within: float = GUARD) -> list[str]:
        """Wait until `count` lines contain `containing` (polling the file the server writes)."""
        with anyio.move_on_after(within):
            while len(found := self.lines(containing)) < count:
                assert self.process.poll() is None or self.lines(containing), self.text()
                await anyio.sleep(0.02)
            return found
        raise AssertionError(f"no log line with {containing!r} within {within} s; the log:\n{self.text()}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def logged_serve(targets: list[str], env: dict[str, str], log: Path, *args: str, ready_path: str,
                 port: int | None = None) -> Iterator[LoggedServer]:
    """Run `think serve TARGETS ARGS` (its stderr into `log`, appended) until the block ends."""
    port = free_port() if port is None else port
    command = [sys.executable, "-m", "think.cli", "serve", *targets, "--host", "127.0.0.1", "--port", str(port),
               "--no-ui", *args]
    with log.open("ab") as sink:
        process = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=sink, env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **env})
    server = LoggedServer(process, port, log)
    try:
        server.wait_ready(ready_path)
        yield server
    finally:
        server.stop()
