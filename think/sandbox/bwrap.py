"""Running a bash script under bubblewrap, over a directory that becomes the sandbox's `/`.

The recipe (see `research/sandboxes.md` §4, where every escape tried against it failed):

* as root, the root directory is a fresh tmpfs (`size`, `nr_inodes`, nosuid, nodev) owned by a
  per-run unprivileged uid, and the script runs as that uid (`setpriv`, no capabilities, no
  groups) — bwrap run by real root is *not* a privilege drop on its own;
* bwrap (`think.sandbox.command`): every namespace unshared (no network unless an allowlist
  proxy is set up), user namespaces disabled inside, a fresh `/proc` with `/proc/sys` read-only,
  a minimal read-only `/dev` with a sized `/dev/shm`, `/usr` read-only, a sized private `/tmp`, no
  `/etc`, `/home` or `/root`, an empty environment, and no host path on its command line;
* rlimits (address space, file size, processes, open files, CPU) set by `prlimit` before the
  uid switch, a memory cap for the whole run (`think.sandbox.memory`: a cgroup, or an rlimit
  budget), and a seccomp filter (`think.sandbox.seccomp`);
* a wall-clock timeout that kills the process group; killing bwrap kills its PID namespace, and
  a final sweep kills anything left running as the run's uid.

Without root (a laptop) the root directory is a private temporary directory, the script runs as
the current user inside bwrap's user namespace, and the disk and inode caps of the tmpfs do not
apply (file size, count and output limits still do).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal

import anyio
import anyio.abc

from think.sandbox import memory as run_memory
from think.sandbox.command import bwrap_args, encode_args, host_command
from think.sandbox.memory import MemoryPlan, RunCgroup, pid_alive
from think.sandbox.network import PROXY_PORT, AllowlistProxy, AllowRule, create_namespace
from think.sandbox.root import SandboxRoot
from think.sandbox.seccomp import seccomp_filter

MAX_SCRIPT_CHARS = 100_000
"""A script travels as one argument, and Linux caps one argument at 128 KiB."""
_MS_NOSUID, _MS_NODEV, _MNT_DETACH, _UMOUNT_NOFOLLOW = 2, 4, 2, 8
_UID_BASE, _UID_SPAN = 2_000_000_000, 1 << 24
_uids_in_use: set[int] = set()
_swept = False


class SandboxUnavailable(RuntimeError):
    """bubblewrap (or a tool the recipe needs) is missing or cannot run here."""


@dataclass(frozen=True, kw_only=True)
class Limits:
    timeout: float = 30.0
    """Seconds of wall-clock time; then the run is killed and reports exit code 124."""
    max_output_bytes: int = 64_000
    """Per stream (stdout, stderr); the rest is counted and dropped."""
    max_file_bytes: int = 1_048_576
    """No file can grow past this (RLIMIT_FSIZE, rounded up to the next 1 KiB)."""
    max_inodes: int = 1_100
    """Files, directories and links in the tmpfs (root only)."""
    disk_bytes: int = 64 * 1024 * 1024
    """tmpfs size (root only)."""
    memory_bytes: int = 1024 * 1024 * 1024
    """Address space per process (RLIMIT_AS)."""
    run_memory_bytes: int = 1024 * 1024 * 1024
    """Memory of the whole run, all processes together (`think.sandbox.memory`: a cgroup, or an
    rlimit budget where none can be made)."""
    memory_mode: Literal["auto", "budget"] = "auto"
    """"budget" uses the rlimit budget even where a cgroup could be made."""
    budget_processes: int = 16
    """With the rlimit budget: processes allowed, each with `run_memory_bytes / budget_processes`."""
    max_processes: int = 128
    max_open_files: int = 256
    shm_bytes: int = 16 * 1024 * 1024
    """Size of `/dev/shm`."""
    tmp_bytes: int = 16 * 1024 * 1024
    """Size of `/tmp`."""


@dataclass(frozen=True, kw_only=True)
class RunResult:
    stdout: bytes
    stderr: bytes
    exit_code: int
    timed_out: bool = False
    stdout_dropped: int = 0
    """Bytes of stdout beyond `max_output_bytes`, not kept."""
    stderr_dropped: int = 0
    network_log: tuple[str, ...] = ()
    """With an allowlist: one line per proxied request."""
    memory: MemoryPlan | None = None
    """How the run's memory was bounded."""
    oom_kills: int = 0
    """Processes the kernel killed because the run reached its memory cap (cgroup modes)."""


@dataclass(slots=True)
class _Capture:
    limit: int
    data: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - max(room, 0))


@dataclass(frozen=True)
class _Tools:
    bwrap: str
    prlimit: str
    setpriv: str | None
    nsenter: str | None


_found: _Tools | None = None


def find_tools() -> _Tools:
    """The executables the recipe uses; `SandboxUnavailable` names what is missing."""
    global _found
    if _found is not None:
        return _found
    paths = {name: shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin")
             for name in ("bwrap", "prlimit", "setpriv", "nsenter")}
    missing = [name for name in ("bwrap", "prlimit") if paths[name] is None]
    if os.geteuid() == 0:
        missing += [name for name in ("setpriv",) if paths[name] is None]
    if missing:
        packages = {"bwrap": "bubblewrap", "prlimit": "util-linux", "setpriv": "util-linux"}
        raise SandboxUnavailable("the bash sandbox needs " + ", ".join(missing) + " (Debian packages: "
                                 + ", ".join(sorted({packages[m] for m in missing})) + ")")
    _found = _Tools(str(paths["bwrap"]), str(paths["prlimit"]), paths["setpriv"], paths["nsenter"])
    return _found


# ---- the root directory ---------------------------------------------------------------------------


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _new_uid() -> int:
    for _ in range(64):
        uid = _UID_BASE + secrets.randbelow(_UID_SPAN)
        if uid not in _uids_in_use:
            _uids_in_use.add(uid)
            return uid
    raise SandboxUnavailable("no free sandbox uid")  # pragma: no cover - 64 collisions in 16M


@asynccontextmanager
async def sandbox_root(*, disk_bytes: int, max_inodes: int) -> AsyncIterator[SandboxRoot]:
    """A fresh, private root directory (a tmpfs as root), removed afterwards."""
    find_tools()
    _sweep_left_roots()
    base = tempfile.mkdtemp(prefix=f"think-bash-{os.getpid()}-")
    target = os.path.join(base, "root")
    os.mkdir(target, 0o700)
    uid: int | None = None
    mounted = False
    try:
        if os.geteuid() == 0:
            uid = _new_uid()
            os.chmod(base, 0o711)  # the run's uid must reach the mount point; it cannot list `base`
            options = f"size={disk_bytes},nr_inodes={max_inodes},mode=0755,uid={uid},gid={uid}"
            if _libc().mount(b"tmpfs", target.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options.encode()) != 0:
                error = ctypes.get_errno()
                raise SandboxUnavailable(f"cannot mount the sandbox's tmpfs: {os.strerror(error)}")
            mounted = True
        yield SandboxRoot(target, uid)
    finally:
        if mounted:
            _libc().umount2(target.encode(), _MNT_DETACH)
        if uid is not None:
            _uids_in_use.discard(uid)
        _remove_tree(base)


def _sweep_left_roots() -> None:
    """Once per process: unmount and delete the root directories that runs cut off by their
    process's death (`kill -9`) left behind. Only directories of this user whose process is gone."""
    global _swept
    if _swept:
        return
    _swept = True
    tmp = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for name in os.listdir(tmp):
            match = re.fullmatch(r"think-bash-(\d+)-\w+", name)
            path = os.path.join(tmp, name)
            if match is None or pid_alive(int(match.group(1))):
                continue
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
                    continue
                if os.geteuid() == 0:
                    _libc().umount2(os.path.join(path, "root").encode(), _MNT_DETACH | _UMOUNT_NOFOLLOW)
                _remove_tree(path)


def _remove_tree(path: str) -> None:
    """Delete a run's directory, however the script left it (locked, or nested very deep)."""
    try:
        shutil.rmtree(path, onerror=_force_remove)
    except (OSError, RecursionError):
        subprocess.run(["chmod", "-R", "u+rwx", path], check=False, capture_output=True, timeout=60)
        subprocess.run(["rm", "-rf", "--one-file-system", path], check=False, capture_output=True, timeout=60)


def _force_remove(function: object, path: str, _exc: object) -> None:
    """rmtree helper: a script may leave directories without write or execute permission."""
    with contextlib.suppress(OSError):
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
            shutil.rmtree(path, onerror=_force_remove)
        else:
            os.unlink(path)


# ---- running ---------------------------------------------------------------------------------------


def _kill_group(process: anyio.abc.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _running_as(uid: int) -> list[int]:
    """Processes running as `uid` (zombies left out: they run nothing and hold nothing)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{name}").st_uid == uid:
                with open(f"/proc/{name}/stat", "rb") as f:
                    state = f.read().rpartition(b")")[2][1:2]
                if state not in (b"Z", b"X"):
                    found.append(int(name))
    return found


async def sweep_uid(uid: int, *, grace: float = 2.0) -> int:
    """Kill every process running as `uid` (the run's own uid: nothing else uses it) and wait until
    none is left, at most `grace` seconds; returns how many were signalled."""
    killed = 0
    with anyio.move_on_after(grace):
        while pids := _running_as(uid):
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            killed += len(pids)
            await anyio.sleep(0.005)
    return killed


async def _pump(stream: anyio.abc.ByteReceiveStream | None, capture: _Capture) -> None:
    if stream is None:
        return
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        async for chunk in stream:
            capture.feed(chunk)


async def _pump_both(process: anyio.abc.Process, out: _Capture, err: _Capture, done: anyio.Event) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(_pump, process.stdout, out)
        group.start_soon(_pump, process.stderr, err)
    done.set()


async def run_script(root: SandboxRoot, script: str, *, cwd: str = "/", limits: Limits | None = None,
                     network: Sequence[AllowRule] = (), env: Mapping[str, str] | None = None) -> RunResult:
    """Run `bash -c script` in the sandbox over `root`; see the module docstring.

    `network` holds `AllowRule`s (`parse_allowlist`); empty means no network at all. Cancelling the caller
    kills the sandbox. Raises `SandboxUnavailable` when the recipe cannot run here.
    """
    limits = limits or Limits()
    tools = find_tools()
    rules = list(network)
    environment = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/", "LANG": "C.UTF-8", "TERM": "dumb",
                   "TMPDIR": "/tmp", "USER": "user", **(env or {})}
    memory = run_memory.plan(limits.run_memory_bytes, limits.memory_bytes, limits.max_processes,
                             limits.budget_processes, mode=limits.memory_mode)
    out, err = _Capture(limits.max_output_bytes), _Capture(limits.max_output_bytes)
    fds: list[int] = []
    listener = None
    proxy: AllowlistProxy | None = None
    cgroup: RunCgroup | None = None
    process: anyio.abc.Process | None = None
    timed_out = False
    oom_kills = 0
    try:
        netns_fd: int | None = None
        if rules:
            if root.uid is None or tools.nsenter is None:
                raise SandboxUnavailable("a network allowlist needs root and nsenter (util-linux)")
            netns_fd, listener = await create_namespace()
            fds.append(netns_fd)
            proxy = AllowlistProxy(rules)
            url = f"http://127.0.0.1:{PROXY_PORT}"
            environment.update({"http_proxy": url, "https_proxy": url, "HTTP_PROXY": url, "HTTPS_PROXY": url})
        seccomp_fd: int | None = None
        if (program := seccomp_filter()) is not None:
            seccomp_fd = _memfd("think-seccomp", program)
            fds.append(seccomp_fd)
        args = bwrap_args(root, cwd, limits, seccomp_fd=seccomp_fd, shared_net=netns_fd is not None,
                          env=environment)
        args_fd = _memfd("think-bwrap-args", encode_args(args))
        fds.append(args_fd)
        try:
            cgroup = await RunCgroup.for_plan(memory)
        except OSError as exc:
            raise SandboxUnavailable(f"cannot make the sandbox's memory cgroup: {exc}") from exc
        command = host_command(tools, root, script, limits, memory, args_fd=args_fd, netns_fd=netns_fd, cgroup=cgroup)
        async with anyio.create_task_group() as group:
            if proxy is not None and listener is not None:
                group.start_soon(proxy.serve, listener)
                listener = None  # the proxy owns it now
            process = await anyio.open_process(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, start_new_session=True, pass_fds=fds,
                                               env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
            for fd in fds:
                os.close(fd)
            fds = []
            drained = anyio.Event()
            group.start_soon(_pump_both, process, out, err, drained)
            with anyio.move_on_after(limits.timeout) as scope:
                await process.wait()
                await drained.wait()
            if scope.cancelled_caught:
                timed_out = True
                _kill_group(process)
                await process.wait()
                # Killing bwrap ends its PID namespace, which closes the pipes.
                with anyio.move_on_after(2):
                    await drained.wait()
            group.cancel_scope.cancel()  # the proxy, and pumps that did not finish
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        if listener is not None:
            listener.close()
        if process is not None:
            if process.returncode is None:
                _kill_group(process)
            with anyio.move_on_after(5, shield=True):
                await process.aclose()  # closes the pipes and reaps bwrap
        if root.uid is not None:
            with anyio.CancelScope(shield=True):
                await sweep_uid(root.uid)
        if cgroup is not None:
            oom_kills = cgroup.oom_kills()
            with anyio.CancelScope(shield=True):
                await cgroup.aremove()
    assert process is not None and process.returncode is not None
    code = process.returncode
    exit_code = 124 if timed_out else (128 - code if code < 0 else code)
    return RunResult(stdout=bytes(out.data), stderr=bytes(err.data), exit_code=exit_code, timed_out=timed_out,
                     stdout_dropped=out.dropped, stderr_dropped=err.dropped,
                     network_log=tuple(proxy.log) if proxy else (), memory=memory, oom_kills=oom_kills)


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
