"""One process per data directory: an OS lock on `<data_dir>/_owner.lock`.

The embedded runtime keeps every agent's transcript in SQLite files that only one process may
drive: two processes serving one agent would each run turns on their own copy of its state and
fork the conversation. So a process holds an exclusive `flock` on the data directory while it
has any agent of it open, or serves it (a server's whole life). The kernel drops the lock when
the process dies, however it dies (a `kill -9` leaves no stale lock), and the lock file records
who holds it so the next process can say who is in the way.

Within one process the lock is shared: every `EmbeddedRuntime` over the same directory counts
as one holder, and the lock is released when the last claim ends. A child made with `os.fork()`
is another process: it gives up its copy of the lock at once.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from think.errors import DataDirInUse

LOCK_NAME = "_owner.lock"

_lock = threading.Lock()
_held: dict[Path, _Held] = {}


class _Held:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.claims = 0


def claim(data_dir: Path) -> None:
    """Add one claim on `data_dir` for this process, taking the OS lock on the first; raises
    `DataDirInUse` if another live process holds it."""
    key = data_dir.resolve()
    with _lock:
        held = _held.get(key)
        if held is None:
            held = _held[key] = _Held(_acquire(key))
        held.claims += 1


def release(data_dir: Path) -> None:
    """End one claim; the OS lock is given up with the last. Releasing more than was claimed
    (after a fork, say) is a no-op."""
    key = data_dir.resolve()
    with _lock:
        held = _held.get(key)
        if held is None:
            return
        held.claims -= 1
        if held.claims <= 0:
            del _held[key]
            os.close(held.fd)  # closing the only descriptor drops the flock


def holds(data_dir: Path) -> bool:
    """True while this process holds the lock on `data_dir`."""
    with _lock:
        return data_dir.resolve() in _held


def owner(data_dir: Path) -> dict[str, Any]:
    """What the lock file says about the process that holds (or last held) `data_dir`."""
    try:
        text = (data_dir / LOCK_NAME).read_text(encoding="utf-8")
        found = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _acquire(data_dir: Path) -> int:
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DataDirInUse(data_dir, owner(data_dir)) from None
    except BaseException:
        os.close(fd)
        raise
    record = {"pid": os.getpid(), "host": socket.gethostname(), "command": _command(),
              "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(record).encode(), 0)
    return fd


def _command() -> str:
    """This process's command line, as typed where the system tells (`python -m think.cli serve …`);
    for a worker that `multiprocessing` spawned (uvicorn's `--workers`), its parent's."""
    words = _cmdline("self") or [sys.executable, *sys.argv]
    if "--multiprocessing-fork" in words and (parent := _cmdline(str(os.getppid()))):
        command = f"a worker of pid {os.getppid()}: {_join(parent)}"
    else:
        command = _join(words)
    return command if len(command) <= 300 else command[:297] + "..."


def _cmdline(pid: str) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def _join(words: list[str]) -> str:
    return " ".join([Path(words[0]).name, *words[1:]])


def _forget_after_fork() -> None:
    """In a forked child: close the inherited descriptors (the parent keeps its lock)."""
    global _lock
    _lock = threading.Lock()
    for held in _held.values():
        try:
            os.close(held.fd)
        except OSError:
            pass
    _held.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
