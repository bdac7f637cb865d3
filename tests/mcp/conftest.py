"""The demo MCP server (`tests.mcp.demo_server`) as a real subprocess, over HTTP and over stdio; the
OAuth-protected one (`tests.mcp.oauth_server`) over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def env() -> dict[str, str]:
    """The environment for subprocesses: this worktree's `think` and tests first on the path."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


@dataclass
class DemoServer:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def sse_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/legacy/sse"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


def start_demo_server(port: int | None = None) -> DemoServer:
    port = port or free_port()
    process = subprocess.Popen([sys.executable, "-m", "tests.mcp.demo_server", "http", str(port)], env=env(),
                               cwd=ROOT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the demo MCP server exited with {process.returncode}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
            return DemoServer(process, port)
        except httpx.TransportError:
            time.sleep(0.05)  # polling for the port with a deadline, not waiting a fixed time
    process.kill()
    raise RuntimeError("the demo MCP server did not start listening within 30 s")


@pytest.fixture
def demo_server() -> Iterator[DemoServer]:
    server = start_demo_server()
    try:
        yield server
    finally:
        server.kill()


STDIO_COMMAND = sys.executable
STDIO_ARGS = ["-m", "tests.mcp.demo_server", "stdio"]
"""`add_mcp_server(name, command=STDIO_COMMAND, args=STDIO_ARGS)`: the demo server over stdio."""


@dataclass
class OAuthServer:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def stats(self) -> dict[str, int]:
        """What the server was asked so far (registrations, authorizations, exchanges, refreshes)."""
        return dict(httpx.get(f"{self.base}/test/stats", timeout=10).json())

    def expire_tokens(self) -> None:
        """Every access token issued so far stops working (for the server)."""
        httpx.post(f"{self.base}/test/expire", timeout=10).raise_for_status()


@pytest.fixture
def oauth_server() -> Iterator[OAuthServer]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "tests.mcp.oauth_server", str(port)], env=env(), cwd=ROOT,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "the OAuth server exited while starting"
            try:
                httpx.get(f"http://127.0.0.1:{port}/test/stats", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the OAuth server did not start within 30 s"
                time.sleep(0.05)  # polling for the port with a deadline
        yield OAuthServer(process, port)
    finally:
        process.kill()
        process.wait(timeout=10)
