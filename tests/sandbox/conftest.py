"""Fixtures for the sandbox tests: a workspace, and a canary server on 127.0.0.1 that counts visits."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from think.storage import Database
from think.workspace import Workspace

needs_sandbox = pytest.mark.usefixtures("bubblewrap")
"""Skips a test without bubblewrap, fails it under CI (the `bubblewrap` fixture in tests/conftest.py)."""
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and the tmpfs need root")


@pytest.fixture
def ws() -> Workspace:
    return Workspace(Database(":memory:"))


@dataclass
class Canary:
    """Counts every TCP connection to 127.0.0.1:`port` and answers HTTP 200 "canary"."""

    port: int = 0
    hits: list[bytes] = field(default_factory=list)


@pytest.fixture
def canary() -> Iterator[Canary]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    found = Canary(port=server.getsockname()[1])
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(2)
                request = b""
                with contextlib.suppress(OSError):
                    request = conn.recv(65536)
                found.hits.append(request)
                with contextlib.suppress(OSError):
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\ncanary")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield found
    stop.set()
    thread.join(5)
    server.close()
