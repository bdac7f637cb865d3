"""Text frames that are not UTF-8: closed with 1007, logged once per connection, no traceback.

uvicorn's WebSocket protocol (`websockets-sansio`, what `--ws auto` picks) decodes text frames
itself and logs a failure with `logger.exception`: an ERROR and a traceback per connection, which
a hostile client can repeat without end. A raw socket (no client library would send such frames)
opens several connections and sends many bad frames on each, against an in-process server whose
`uvicorn.error` records are captured, and against a real `think serve` whose stderr is read.
"""

from __future__ import annotations

import base64
import logging
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chat.live_server import serve_in_thread
from tests.server.agents import Notes
from think.runtime import EmbeddedRuntime
from think.server import create_app

CONNECTIONS = 4
FRAMES = 40
BAD_TEXT = b"\xff\xfe not UTF-8 \xc3"
ROOT = Path(__file__).resolve().parents[2]


def _frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """One masked client frame (FIN set)."""
    mask = os.urandom(4)
    size = len(payload)
    length = bytes([0x80 | size]) if size < 126 else bytes([0x80 | 126]) + struct.pack("!H", size)
    head = bytes([0x80 | opcode]) + length
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def send_bad_text(port: int, path: str = "/agents/notes/utf8") -> int | None:
    """Open a WebSocket by hand, send `FRAMES` text frames of invalid UTF-8; the close code."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(4096)
            assert chunk, "the server closed during the handshake"
            received += chunk
        assert received.startswith(b"HTTP/1.1 101"), received
        received = received.split(b"\r\n\r\n", 1)[1]
        try:
            sock.sendall(b"".join(_frame(BAD_TEXT) for _ in range(FRAMES)))
        except OSError:
            pass  # closed after the first: the rest may be refused
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except OSError:
            pass
    return _close_code(received)


def _close_code(data: bytes) -> int | None:
    """The code of the first close frame among the server's (unmasked) frames."""
    while len(data) >= 2:
        opcode, size = data[0] & 0x0F, data[1] & 0x7F
        offset = 2
        if size == 126:
            size, offset = struct.unpack("!H", data[2:4])[0], 4
        elif size == 127:
            size, offset = struct.unpack("!Q", data[2:10])[0], 10
        payload, data = data[offset:offset + size], data[offset + size:]
        if opcode == 0x8:
            return int(struct.unpack("!H", payload[:2])[0]) if len(payload) >= 2 else None
    return None


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def uvicorn_records() -> Iterator[Records]:
    handler = Records()
    yield handler
    logging.getLogger("uvicorn.error").removeHandler(handler)


def test_invalid_utf8_is_logged_once_per_connection_without_a_traceback(tmp_path: Path,
                                                                        uvicorn_records: Records) -> None:
    app = create_app([Notes], runtime=EmbeddedRuntime(tmp_path / "data"))
    with serve_in_thread(app, ws="websockets-sansio", log_level="info") as server:
        logging.getLogger("uvicorn.error").addHandler(uvicorn_records)  # after uvicorn configured its logging
        codes = [send_bad_text(server.port) for _ in range(CONNECTIONS)]
    assert codes == [1007] * CONNECTIONS
    about = [r for r in uvicorn_records.records if "UTF-8" in r.getMessage()]
    assert 1 <= len(about) <= CONNECTIONS, [r.getMessage() for r in about]
    for record in about:
        assert record.exc_info is None and record.exc_text is None
        assert record.levelno == logging.WARNING
        assert "Traceback" not in uvicorn_records.format(record)
    assert not [r for r in uvicorn_records.records if r.levelno >= logging.ERROR]


def test_think_serve_logs_one_line_per_connection(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    stderr = tmp_path / "stderr.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "TERM": "dumb"}
    with stderr.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "think.cli", "serve", "tests.server.agents:Notes", "--no-ui",
             "--data-dir", str(tmp_path / "data"), "--port", str(port)],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 30
            while True:  # up once it accepts connections
                assert process.poll() is None, stderr.read_text()
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "think serve did not start within 30 s"
                    time.sleep(0.05)
            codes = [send_bad_text(port) for _ in range(CONNECTIONS)]
        finally:
            process.terminate()
            process.wait(timeout=15)
    assert codes == [1007] * CONNECTIONS
    log = stderr.read_text()
    assert "Traceback" not in log and "UnicodeDecodeError" not in log, log
    lines = [line for line in log.splitlines() if "UTF-8" in line]
    assert 1 <= len(lines) <= CONNECTIONS, log
