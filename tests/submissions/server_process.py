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


    def stop(self) -> None:
        """SIGTERM (a clean shutdown), SIGKILL if it takes more than 10 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def wait_ready(self, ready_path: str) -> None:
        """Block until `GET ready_path` answers 200 (30 s at most)."""
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, "the server process exited while starting"
            try:
                if httpx.get(self.http + ready_path, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start within 30 s"
            time.sleep(0.05)

    async def ready(self, ready_path: str, *, within: float = 60) -> None:
        """`wait_ready` without blocking the event loop (a guard of `within` seconds)."""
        with anyio.fail_after(within):
            async with httpx.AsyncClient(timeout=5) as http:
                while True:
                    assert self.process.poll() is None, "the server process exited while starting"
                    try:
                        if (await http.get(self.http + ready_path)).status_code == 200:
                            return
                    except httpx.HTTPError:
                        pass
                    await anyio.sleep(0.05)


def spawn_uvicorn(app: str, env: dict[str, str], *, port: int = 0) -> ServerProcess:
    """Start `python -m uvicorn <app>` on a socket bound here (it may not be ready yet); `port`:
    the port of a server that was killed, for clients that reconnect to the same address."""
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
    return ServerProcess(process, port)


def spawn_think_serve(targets: list[str], env: dict[str, str], *, port: int | None = None) -> ServerProcess:
    """Start the real `think serve TARGETS` (on `port`, default a free one; it may not be ready yet)."""
    if port is None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
    command = [sys.executable, "-m", "think.cli", "serve", *targets, "--host", "127.0.0.1", "--port", str(port),
               "--no-ui"]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **env})
    return ServerProcess(process, port)


@contextmanager
def serve_process(app: str, env: dict[str, str], *, ready_path: str, port: int = 0) -> Iterator[ServerProcess]:
    """Run `python -m uvicorn <app>` until the block ends (or the test kills it). `port`: the
    port of a server that was killed, for clients that reconnect to the same address."""
    server = spawn_uvicorn(app, env, port=port)
    try:
        server.wait_ready(ready_path)
        yield server
    finally:
        server.stop()


@contextmanager
def think_serve_process(targets: list[str], env: dict[str, str], *, ready_path: str,
                        port: int | None = None) -> Iterator[ServerProcess]:
    """Run the real `think serve TARGETS` (on `port`, default a free one) until the block ends."""
    server = spawn_think_serve(targets, env, port=port)
    try:
        server.wait_ready(ready_path)
        yield server
    finally:
        server.stop()


async def eventually(predicate: Callable[[], object], *, within: float = 30) -> None:
    """Wait until `predicate()` is true (polling: another process or task makes it so)."""
    with anyio.fail_after(within):
        while not predicate():  # noqa: ASYNC110 - nothing to wait on but the condition itself
            await anyio.sleep(0.02)
