"""A local headless Chromium we launch and own: its own temporary profile, its own process group.

    chromium = launch_chromium()            # blocks until DevTools answers (or raises)
    chromium.websocket_url, chromium.http_url
    chromium.kill()                          # the whole group, then the profile directory

The process ends with ours in every way we can arrange: `kill()` (the tools' `close()`), an
`atexit` hook, and on Linux the parent-death signal (PR_SET_PDEATHSIG), so a SIGKILLed Python
process does not leave a browser behind. Chromium runs in a new session (`setsid`), so `kill()`
reaches its renderer and GPU children too.

The launch flags route every request the browser would make itself through a proxy that does
not exist (`DEAD_PROXY`): the only way content reaches a page is through the request
interception of `think.tools.browser.guard`, which applies the URL policy. DevTools listens on
127.0.0.1 on a port the kernel picks.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from think.errors import ConfigurationError

DEAD_PROXY = "http://proxy.invalid:9"
"""Where the browser's own network traffic goes: a host under `.invalid` (RFC 6761, never
resolves), so anything the interception does not answer fails."""
PROXY_BYPASS = "<-loopback>"
"""Drops Chromium's implicit bypass of loopback addresses: 127.0.0.1 goes to the dead proxy too."""
CANDIDATES = ("chromium", "chromium-headless-shell", "chromium-browser", "google-chrome", "chrome")
FLAGS = (
    "--headless",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--disable-features=Translate,MediaRouter,OptimizationHints,InterestFeedContentSuggestions",
    "--mute-audio",
    "--hide-scrollbars",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    f"--proxy-server={DEAD_PROXY}",
    f"--proxy-bypass-list={PROXY_BYPASS}",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "about:blank",
)
_LISTENING = "DevTools listening on "
_live: set[Chromium] = set()


def find_executable(executable: str | None = None) -> str:
    """The Chromium binary: `executable` if given, else the first of `CANDIDATES` on PATH."""
    if executable:
        found = shutil.which(executable) if os.sep not in executable else executable
        if not found or not os.access(found, os.X_OK):
            raise ConfigurationError(f"browser executable {executable!r} is not an executable file")
        return found
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    raise ConfigurationError("no Chromium found: install it (Debian: apt-get install chromium) or pass executable=")


@dataclass(eq=False)
class Chromium:
    """A running browser of ours."""

    process: subprocess.Popen[bytes]
    profile: str
    websocket_url: str = ""
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=40))

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def http_url(self) -> str:
        """`http://127.0.0.1:<port>` of the DevTools HTTP endpoints (`/json/protocol`, …)."""
        rest = self.websocket_url.split("://", 1)[1]
        return "http://" + rest.split("/", 1)[0]

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the browser's process group, reap it, remove its profile (idempotent)."""
        _live.discard(self)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


_LIBC = _libc() if sys.platform.startswith("linux") else None
_SIGKILL = int(signal.SIGKILL)


def _end_with_parent() -> None:  # runs in the child between fork and exec: nothing to import or allocate
    if _LIBC is not None:
        _LIBC.prctl(1, _SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _no_sandbox() -> bool:
    """Chromium's own sandbox cannot start as root (containers, CI): it must be told so."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def launch_chromium(executable: str | None = None, *, timeout: float = 30.0,
                    extra_args: Sequence[str] = ()) -> Chromium:
    """Start Chromium and wait (at most `timeout` seconds) until DevTools listens.

    Call it from a thread that lives as long as the browser should (the event loop's): on Linux
    the parent-death signal fires when the thread that started the process ends."""
    binary = find_executable(executable)
    profile = tempfile.mkdtemp(prefix="think-browser-")
    args = [binary, *FLAGS[:-1], f"--user-data-dir={profile}", *extra_args]
    if _no_sandbox():
        args.append("--no-sandbox")
    args.append(FLAGS[-1])
    linux = sys.platform.startswith("linux")
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True, preexec_fn=_end_with_parent if linux else None,
                               env={**os.environ, "TMPDIR": profile})
    chromium = Chromium(process, profile)
    _live.add(chromium)
    ready = threading.Event()

    def drain() -> None:  # reads stderr until the browser exits: a full pipe would stall it
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            chromium.stderr.append(line)
            if not chromium.websocket_url and line.startswith(_LISTENING):
                chromium.websocket_url = line[len(_LISTENING):].strip()
                ready.set()
        ready.set()

    threading.Thread(target=drain, name=f"chromium-stderr:{process.pid}", daemon=True).start()
    if not ready.wait(timeout) or not chromium.websocket_url:
        chromium.kill()
        tail = "\n".join(chromium.stderr)
        reason = "did not start in time" if process.returncode is None else f"exited ({process.returncode})"
        raise RuntimeError(f"Chromium {reason}: {tail[-2000:]}")
    return chromium


@atexit.register
def _kill_all() -> None:
    for chromium in list(_live):
        chromium.kill()
