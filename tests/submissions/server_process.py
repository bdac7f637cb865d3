"""A real server in a subprocess (uvicorn on a socket we bound), which a test may SIGKILL."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx

ROOT = Path(__file__).resolve().parents[2]


class ServerProcess:
    def __init__(self, process: subprocess.Popen[bytes], port: int) -> None:
        self.process = process
        self.port = port
        self.http = f"http://127.0.0.1:{port}"
        self.ws = f"ws://127.0.0.1:{port}"

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush, no lifespan exit."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)


@contextmanager
def serve_process(app: str, env: dict[str, str], *, ready_path: str, port: int = 0) -> Iterator[ServerProcess]:
    """Run `python -m uvicorn <app>` until the block ends (or the test kills it). `port`: the
    port of a server that was killed, for clients that reconnect to the same address."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    port = sock.getsockname()[1]
    command = [sys.executable, "-m", "uvicorn", app, "--fd", str(sock.fileno()), "--log-level", "warning",
               "--lifespan", "on"]
    process = subprocess.Popen(command, cwd=ROOT, pass_fds=(sock.fileno(),),
                               env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    sock.close()
    with _running(process, port, ready_path) as server:
        yield server


@contextmanager
def think_serve_process(targets: list[str], env: dict[str, str], *, ready_path: str,
                        port: int | None = None) -> Iterator[ServerProcess]:
    """Run the real `think serve TARGETS` (on `port`, default a free one) until the block ends."""
    if port is None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
    command = [sys.executable, "-m", "think.cli", "serve", *targets, "--host", "127.0.0.1", "--port", str(port),
               "--no-ui"]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **env})
    with _running(process, port, ready_path) as server:
        yield server


@contextmanager
def _running(process: subprocess.Popen[bytes], port: int, ready_path: str) -> Iterator[ServerProcess]:
    server = ServerProcess(process, port)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "the server process exited while starting"
            try:
                if httpx.get(server.http + ready_path, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start within 30 s"
            time.sleep(0.05)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


async def eventually(predicate: Callable[[], object], *, within: float = 30) -> None:
    """Wait until `predicate()` is true (polling: another process or task makes it so)."""
    with anyio.fail_after(within):
        while not predicate():  # noqa: ASYNC110 - nothing to wait on but the condition itself
            await anyio.sleep(0.02)
