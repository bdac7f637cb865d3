"""The protocol harness page and an interactive browser for it (the conformance tests' tools).

`build_harness()` builds `harness/` (the stock hooks, nothing else) with the Vite and packages
of `web/` (their versions are the ones the shipped page pins), when its sources changed.
`ProtocolBrowser` runs `protocol_driver.mjs`: one headless Chromium whose tabs the test opens,
reads, reloads and closes between its own steps (restart a server, read the database, …).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.system_tools import need
from tests.ui.conftest import CHROMIUM

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
WEB = ROOT / "web"
HARNESS = HERE / "harness"
DRIVER = HERE / "protocol_driver.mjs"
SOURCES = [HARNESS / "index.html", HARNESS / "vite.config.mjs", HARNESS / "src" / "main.jsx",
           WEB / "package-lock.json"]


def _run(args: list[str], cwd: Path) -> None:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        pytest.fail(f"`{' '.join(args)}` in {cwd} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}",
                    pytrace=False)


def _web_modules_match_lock() -> bool:
    lock = json.loads((WEB / "package-lock.json").read_text())["packages"]
    for path, entry in lock.items():
        if not path or entry.get("optional"):
            continue
        manifest = WEB / path / "package.json"
        if not manifest.exists() or json.loads(manifest.read_text()).get("version") != entry.get("version"):
            return False
    return True


def build_harness() -> Path:
    """`harness/dist`, rebuilt when a source (or web/'s lock file) changed."""
    purpose = "the protocol conformance tests in Chromium"
    node, npm = need("node", purpose=purpose), need("npm", purpose=purpose)
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in SOURCES)).hexdigest()
    stamp = HARNESS / "dist" / ".sources"
    if stamp.exists() and stamp.read_text() == digest and (HARNESS / "dist" / "index.html").exists():
        return HARNESS / "dist"
    if not _web_modules_match_lock():
        _run([npm, "ci", "--no-audit", "--no-fund"], WEB)
    link = HARNESS / "node_modules"
    if not link.exists():
        if link.is_symlink():
            link.unlink()
        link.symlink_to(Path("..") / ".." / ".." / "web" / "node_modules", target_is_directory=True)
    _run([node, str(WEB / "node_modules" / "vite" / "bin" / "vite.js"), "build", "--config",
          str(HARNESS / "vite.config.mjs")], ROOT)
    stamp.write_text(digest)
    return HARNESS / "dist"


class DriverError(AssertionError):
    pass


class ProtocolBrowser:
    """One headless Chromium driven command by command (see protocol_driver.mjs)."""

    def __init__(self) -> None:
        node = shutil.which("node")
        assert node is not None
        self._proc = subprocess.Popen([node, str(DRIVER), str(CHROMIUM)], cwd=HERE, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self._lines: queue.Queue[str] = queue.Queue()
        self._stderr: list[str] = []
        threading.Thread(target=self._pump, args=(self._proc.stdout, self._lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self._proc.stderr, self._stderr.append), daemon=True).start()
        self._ids = 0
        self._answer(0, 60)

    @staticmethod
    def _pump(stream: Any, sink: Any) -> None:
        for line in stream:
            sink(line)

    def _answer(self, command_id: int, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise DriverError(f"the browser did not answer within {timeout:.0f} s; stderr:\n"
                                  + "".join(self._stderr[-30:])) from None
            if not line.startswith("{"):
                continue
            answer = json.loads(line)
            if answer.get("id") == command_id:
                if not answer["ok"]:
                    raise DriverError(answer["error"])
                return answer["value"]

    def command(self, cmd: str, *, answer_timeout: float = 30, **fields: Any) -> Any:
        self._ids += 1
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps({"id": self._ids, "cmd": cmd, **fields}) + "\n")
        self._proc.stdin.flush()
        return self._answer(self._ids, answer_timeout)

    def open(self, name: str, url: str, *, harness: bool = True) -> Tab:
        """A new tab on `url`; with `harness`, once the harness page's hook is connected."""
        self.command("open", page=name, url=url, harness=harness)
        return Tab(self, name)

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(json.dumps({"id": -1, "cmd": "quit"}) + "\n")
                self._proc.stdin.close()
                self._proc.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()


class Tab:
    """One page of the harness: `window.harness` is the stock hook's state and actions."""

    def __init__(self, browser: ProtocolBrowser, name: str) -> None:
        self.browser = browser
        self.name = name

    def eval(self, js: str) -> Any:
        return self.browser.command("eval", page=self.name, js=js)

    def wait(self, js: str, timeout: float = 15) -> Any:
        """Wait until the expression `js` is truthy in the page; its value. On a timeout the
        error shows what the page holds."""
        try:
            return self.browser.command("wait", page=self.name, js=js, timeout=int(timeout * 1000),
                                        answer_timeout=timeout + 10)
        except DriverError as exc:
            state = self.eval("typeof harness === 'undefined' ? document.body.innerText.slice(-1500) : "
                              "JSON.stringify({status: harness.status, error: harness.error, "
                              "texts: harness.texts ? harness.texts() : null})")
            frames = self.frames()["received"][-12:]
            console = self.browser.command("console", page=self.name)[-10:]
            raise DriverError(f"{exc}\n\npage state: {state}\nlast frames received:\n"
                              + "\n".join(json.dumps(f)[:300] for f in frames)
                              + "\nconsole:\n" + "\n".join(console)) from None

    def settled(self, timeout: float = 15) -> None:
        """Wait until the hook has nothing in flight (no request, no stream, no continuation)."""
        self.wait("harness.ready && harness.status === 'ready' && !harness.busy", timeout)

    def messages(self) -> list[dict[str, Any]]:
        return list(self.eval("JSON.parse(JSON.stringify(harness.messages))"))

    def texts(self) -> list[str]:
        return list(self.eval("harness.texts()"))

    def reload(self) -> None:
        self.browser.command("reload", page=self.name)

    def close(self) -> None:
        self.browser.command("close", page=self.name)

    def frames(self) -> dict[str, list[dict[str, Any]]]:
        return dict(self.browser.command("frames", page=self.name))

    def received(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames()["received"] if f.get("type") == kind]

    def sent(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames()["sent"] if f.get("type") == kind]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """The conformance agents served by a separate Python process (so it can be killed)."""

    def __init__(self, port: int, data_dir: Path) -> None:
        self.port = port
        self.data_dir = data_dir
        self.url = f"http://127.0.0.1:{port}/"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self._proc = subprocess.Popen([sys.executable, "-m", "tests.ui.protocol_agents", str(self.port),
                                       str(self.data_dir)], cwd=ROOT, env=env)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "harness/", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self._proc.poll() is not None:
                raise AssertionError(f"the server exited with {self._proc.returncode}")
            time.sleep(0.05)
        raise AssertionError("the server did not come up within 20 s")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush, like a crashed or evicted process."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait(timeout=10)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


@contextmanager
def server_process(data_dir: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(free_port(), data_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
