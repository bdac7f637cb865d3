"""Fixtures for the `think` command tests: a live server, and `think chat` as a real subprocess.

`think chat` runs with its stdin and stdout on pipes, so it prints plain text (one labelled line
per block) and echoes what it reads as `you: …`. `ChatProcess.expect()` waits, with a bound, for
text to appear on its stdout; the server records every WebSocket frame it receives, so a test can
also wait for what the client sent.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.chat.live_server import LiveServer, serve_in_thread
from tests.cli.agents import CliChat
from think.runtime import EmbeddedRuntime
from think.server import create_app

THINK = [sys.executable, "-m", "think.cli"]
"""The `think` command, run by the interpreter running the tests."""
WAIT = 15.0
"""Seconds any single wait may take."""


def think_env() -> dict[str, str]:
    return {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONUNBUFFERED": "1", "NO_COLOR": "1",
            "TERM": "dumb"}


def run_think(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run `think ARGS` to completion."""
    return subprocess.run([*THINK, *args], capture_output=True, text=True, timeout=timeout, check=False,
                          env=think_env(), stdin=subprocess.DEVNULL)


class FrameRecorder:
    """ASGI middleware: keeps every text frame the server receives on a WebSocket."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.frames: list[str] = []
        self._changed = threading.Condition()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def recording_receive() -> Message:
            message = await receive()
            if message["type"] == "websocket.receive" and message.get("text") is not None:
                with self._changed:
                    self.frames.append(message["text"])
                    self._changed.notify_all()
            return message

        await self.app(scope, recording_receive, send)

    def wait_for(self, predicate: Callable[[list[str]], bool], timeout: float = WAIT) -> list[str]:
        with self._changed:
            if not self._changed.wait_for(lambda: predicate(self.frames), timeout):
                raise AssertionError(f"the server did not receive the expected frames; it got {self.frames!r}")
            return list(self.frames)


class ChatProcess:
    """`think chat URL` in a subprocess, its stdin and stdout on pipes."""

    def __init__(self, url: str, *extra: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([*THINK, "chat", url, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env={**think_env(), **(env or {})})
        self.output = ""
        self.errors = ""
        self._seen = 0
        self._changed = threading.Condition()
        self._eof = False
        self._readers = [threading.Thread(target=self._pump, args=(self.proc.stdout, "output"), daemon=True),
                         threading.Thread(target=self._pump, args=(self.proc.stderr, "errors"), daemon=True)]
        for reader in self._readers:
            reader.start()

    def _pump(self, stream: Any, attribute: str) -> None:
        while chunk := os.read(stream.fileno(), 65536):
            with self._changed:
                setattr(self, attribute, getattr(self, attribute) + chunk.decode("utf-8", errors="replace"))
                self._changed.notify_all()
        with self._changed:
            if attribute == "output":
                self._eof = True
            self._changed.notify_all()

    def expect(self, text: str | re.Pattern[str], timeout: float = WAIT) -> str:
        """Wait until `text` appears in stdout after the previous match; returns the output up to it."""

        def found() -> re.Match[str] | None:
            if isinstance(text, str):
                index = self.output.find(text, self._seen)
                return None if index < 0 else re.compile(re.escape(text)).match(self.output, index)
            return text.search(self.output, self._seen)

        with self._changed:
            if not self._changed.wait_for(lambda: found() is not None or self._eof, timeout) or found() is None:
                raise AssertionError(f"`think chat` did not print {text!r} within {timeout} s.\n"
                                     f"--- stdout since the last match:\n{self.output[self._seen:]}\n"
                                     f"--- stderr:\n{self.errors}")
            match = found()
            assert match is not None
            before = self.output[self._seen:match.end()]
            self._seen = match.end()
            return before

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def interrupt(self) -> None:
        """Ctrl-C."""
        self.proc.send_signal(signal.SIGINT)

    def close_stdin(self) -> None:
        """Ctrl-D."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout: float = WAIT) -> int:
        code = self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()


@pytest.fixture
def recorder(tmp_path: Path) -> FrameRecorder:
    """`CliChat` (with `/_think/info`, as `think serve` has it), wrapped to record incoming frames."""
    return FrameRecorder(create_app([CliChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60),
                                    ui=True))


@pytest.fixture
def server(recorder: FrameRecorder) -> Iterator[LiveServer]:
    with serve_in_thread(recorder) as live:
        yield live


@pytest.fixture
def chat(server: LiveServer) -> Iterator[Callable[..., ChatProcess]]:
    """`chat("room")` starts `think chat` on `/agents/cli-chat/room`; every process is killed at the end."""
    started: list[ChatProcess] = []

    def start(room: str, *extra: str, url: str | None = None) -> ChatProcess:
        process = ChatProcess(url or server.agent_url("cli-chat", room), *extra)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
