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
import time
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
PROFILE_PREFIX = "think-browser-"
OWNER_FILE = "think-browser.pid"
"""In a profile directory: the browser's pid, so a later launch can remove profiles left behind."""
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
    ready: threading.Event = field(default_factory=threading.Event)
    """Set when DevTools listens (`websocket_url` known) or the process ended."""

    def wait_ready(self, timeout: float) -> None:
        """Block until DevTools listens; kill the browser and raise RuntimeError if it does not
        within `timeout` seconds (or exits first)."""
        if self.ready.wait(timeout) and self.websocket_url:
            return
        self.kill()
        reason = "did not start in time" if self.process.returncode is None else f"exited ({self.process.returncode})"
        raise RuntimeError(f"Chromium {reason}: {chr(10).join(self.stderr)[-2000:]}")

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
        remove_profile(self.profile)


def remove_profile(profile: str, *, within: float = 5.0) -> None:
    """Remove a profile directory; a child of the killed browser (the network service) may still
    write into it for a moment, so removal is retried until it stays gone or `within` passes."""
    deadline = time.monotonic() + within
    while True:
        shutil.rmtree(profile, ignore_errors=True)
        if not os.path.exists(profile) or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def remove_stale_profiles() -> None:
    """Remove the profiles of browsers that are gone (their Python process was killed outright)."""
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        if not name.startswith(PROFILE_PREFIX):
            continue
        try:
            pid = int(open(os.path.join(root, name, OWNER_FILE)).read().strip())  # noqa: SIM115
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        except PermissionError:
            pass


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


_LIBC = _libc() if sys.platform.startswith("linux") else None
_SIGKILL = int(signal.SIGKILL)


def _end_with_parent() -> None:  # runs in the child between fork and exec: nothing to import or allocate
    if _LIBC is not None:
        _LIBC.prctl(1, _SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _with_parent_death(args: list[str]) -> tuple[list[str], Any]:
    """The command and preexec function that make the browser die with this process (Linux):
    util-linux `setpriv --pdeathsig KILL` when present (no Python code between fork and exec,
    which is fragile while other threads run), else a `prctl` call in the child."""
    if not sys.platform.startswith("linux"):
        return args, None
    setpriv = shutil.which("setpriv")
    if setpriv:
        return [setpriv, "--pdeathsig", "KILL", "--", *args], None
    return args, _end_with_parent


def _no_sandbox() -> bool:
    """Chromium's own sandbox cannot start as root (containers, CI): it must be told so."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def start_chromium(executable: str | None = None, *, extra_args: Sequence[str] = ()) -> Chromium:
    """Start Chromium; `Chromium.wait_ready()` then waits until DevTools listens.

    Call it from a thread that lives as long as the browser should (the event loop's): on Linux
    the parent-death signal fires when the thread that started the process ends."""
    binary = find_executable(executable)
    remove_stale_profiles()
    profile = tempfile.mkdtemp(prefix=PROFILE_PREFIX)
    args = [binary, *FLAGS[:-1], f"--user-data-dir={profile}", *extra_args]
    if _no_sandbox():
        args.append("--no-sandbox")
    args.append(FLAGS[-1])
    command, preexec = _with_parent_death(args)
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True, preexec_fn=preexec, env={**os.environ, "TMPDIR": profile})
    chromium = Chromium(process, profile)
    _live.add(chromium)
    with open(os.path.join(profile, OWNER_FILE), "w") as owner:
        owner.write(str(process.pid))

    def drain() -> None:  # reads stderr until the browser exits: a full pipe would stall it
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            chromium.stderr.append(line)
            if not chromium.websocket_url and line.startswith(_LISTENING):
                chromium.websocket_url = line[len(_LISTENING):].strip()
                chromium.ready.set()
        chromium.ready.set()

    threading.Thread(target=drain, name=f"chromium-stderr:{process.pid}", daemon=True).start()
    return chromium


def launch_chromium(executable: str | None = None, *, timeout: float = 30.0,
                    extra_args: Sequence[str] = ()) -> Chromium:
    """`start_chromium` and wait (at most `timeout` seconds) until DevTools listens."""
    chromium = start_chromium(executable, extra_args=extra_args)
    chromium.wait_ready(timeout)
    return chromium


@atexit.register
def _kill_all() -> None:
    for chromium in list(_live):
        chromium.kill()
