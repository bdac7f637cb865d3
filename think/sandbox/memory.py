"""A memory cap for a whole sandbox run: all its processes together, not each one.

`RLIMIT_AS` alone bounds one process, so a script could hold `max_processes` times as much. The
run is bounded by the best mechanism this machine allows, chosen once per process:

* `cgroup2`: a child cgroup of ours (v2) with `memory.max` (and no swap), when the memory
  controller is delegated to us;
* `cgroup1`: a child of our memory cgroup (v1) with `memory.limit_in_bytes`, when that hierarchy
  is writable (root on a cgroup-v1 or hybrid machine);
* `budget`: rlimits only, sized so that processes × address space fits the cap
  (`RLIMIT_NPROC` = `budget_processes`, `RLIMIT_AS` = cap / `budget_processes`).

With a cgroup, what the run writes to its tmpfs mounts counts too, and when it reaches the cap the
kernel kills a process of the run (reported as `oom_kills`). The run's process tree joins the
cgroup before anything of it starts (`join_command`), so no child escapes it. A cgroup is removed
when its run ends; one whose agent process was killed is cleared (its processes killed, then
removed) by the next run that makes a cgroup next to it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import signal
from dataclasses import dataclass
from typing import Literal

import anyio

from think.workspace.media import format_size

log = logging.getLogger("think.sandbox")

Mode = Literal["cgroup2", "cgroup1", "budget"]
_PREFIX = "think-bash-"
_counter = itertools.count(1)
_detected: tuple[Mode, str] | None = None


@dataclass(frozen=True)
class MemoryPlan:
    """How one run's memory is bounded."""

    mode: Mode
    total: int
    """Bytes for the whole run."""
    per_process: int
    """RLIMIT_AS of each process."""
    processes: int
    """RLIMIT_NPROC (the run's own uid: bubblewrap's two processes count too)."""

    def describe(self) -> str:
        """One phrase for the tool's description."""
        size = format_size(self.total)
        if self.mode == "budget":
            return (f"memory: at most {self.processes} processes (the sandbox's own 2 included) of "
                    f"{format_size(self.per_process)} address space each, {size} in all")
        return (f"memory: {size} for all processes of a run together (a {self.mode} limit: past it the "
                "kernel kills a process)")


def plan(total: int, per_process: int, max_processes: int, budget_processes: int, *,
         mode: Literal["auto", "budget"] = "auto") -> MemoryPlan:
    """The plan for a run: a cgroup where one can be made here, else the rlimit budget."""
    found = detect()[0] if mode == "auto" else "budget"
    if found == "budget":
        processes = max(3, min(max_processes, budget_processes))
        return MemoryPlan("budget", total, max(1 << 20, min(per_process, total // processes)), processes)
    return MemoryPlan(found, total, min(per_process, total), max_processes)


def detect() -> tuple[Mode, str]:
    """The best mode here and the cgroup directory new run cgroups go under ("" for budget)."""
    global _detected
    if _detected is None:
        _detected = _probe()
        log.info("bash sandbox memory cap: %s%s", _detected[0], f" under {_detected[1]}" if _detected[1] else
                 " (no writable memory cgroup here: rlimits only)")
    return _detected


def _probe() -> tuple[Mode, str]:
    if os.geteuid() != 0 and not _delegated_v2():
        return "budget", ""
    for mode, parent in _candidates():
        try:
            probe = RunCgroup.create(mode, parent, 64 << 20)
        except OSError:
            continue
        if not probe.remove():
            continue
        return mode, parent
    return "budget", ""


def _delegated_v2() -> bool:
    return any(mode == "cgroup2" and os.access(parent, os.W_OK) for mode, parent in _candidates())


def _candidates() -> list[tuple[Mode, str]]:
    """Our own memory cgroup in each hierarchy that has the memory controller, v2 first."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            memberships = [line.rstrip("\n").split(":", 2) for line in f if line.count(":") >= 2]
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return []
    found: list[tuple[Mode, str]] = []
    for fields in mounts:
        if "-" not in fields:
            continue
        sep = fields.index("-")
        fstype, options = fields[sep + 1], fields[sep + 3].split(",") if len(fields) > sep + 3 else []
        root, point = fields[3], fields[4]
        for _, controllers, path in memberships:
            if fstype == "cgroup2" and controllers == "":
                mode: Mode = "cgroup2"
            elif fstype == "cgroup" and "memory" in controllers.split(",") and "memory" in options:
                mode = "cgroup1"
            else:
                continue
            relative = os.path.relpath(path, root) if root != "/" else path.lstrip("/")
            if relative.startswith(".."):
                continue  # our cgroup is outside what this mount shows
            found.append((mode, os.path.normpath(os.path.join(point, relative))))
    found.sort(key=lambda candidate: candidate[0] != "cgroup2")
    return found


def _left_behind(parent: str) -> list[RunCgroup]:
    """The run cgroups under `parent` whose agent process is gone (killed mid-run), with whatever
    still runs in them killed (a sandbox whose agent died before bubblewrap could tie itself to
    it). Removing them is the caller's: their processes may still be exiting."""
    left = []
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            match = re.fullmatch(_PREFIX + r"(\d+)-\d+", name)
            if match and not pid_alive(int(match.group(1))):
                group = RunCgroup("cgroup1", os.path.join(parent, name))  # removing is the same in v1 and v2
                with contextlib.suppress(OSError), open(group.procs, encoding="ascii") as f:
                    for pid in f.read().split():
                        with contextlib.suppress(OSError):
                            os.kill(int(pid), signal.SIGKILL)
                left.append(group)
    return left


def pid_alive(pid: int) -> bool:
    """True while a process with this pid exists (a run's owner, say)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunCgroup:
    """The cgroup of one run."""

    def __init__(self, mode: Mode, path: str) -> None:
        self.mode = mode
        self.path = path

    @classmethod
    async def for_plan(cls, plan: MemoryPlan) -> RunCgroup | None:
        """The cgroup of a new run under `plan` (None for the rlimit budget), once the cgroups of
        runs cut off by their agent's death are cleared."""
        if plan.mode == "budget":
            return None
        parent = detect()[1]
        for group in _left_behind(parent):
            await group.aremove()
        return cls.create(plan.mode, parent, plan.total)

    @classmethod
    def create(cls, mode: Mode, parent: str, limit: int) -> RunCgroup:
        if mode == "cgroup2":
            _enable_memory(parent)
        path = os.path.join(parent, f"{_PREFIX}{os.getpid()}-{next(_counter)}")
        os.mkdir(path)
        group = cls(mode, path)
        try:
            if mode == "cgroup2":
                group._write("memory.max", str(limit))
                group._write("memory.swap.max", "0", optional=True)
            else:
                group._write("memory.limit_in_bytes", str(limit))
                group._write("memory.memsw.limit_in_bytes", str(limit), optional=True)
        except OSError:
            group.remove()
            raise
        return group

    @property
    def procs(self) -> str:
        return os.path.join(self.path, "cgroup.procs")

    def join_command(self) -> list[str]:
        """A prefix that moves the command into this cgroup, then execs it (before it can fork)."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', self.procs]

    def oom_kills(self) -> int:
        """Processes of the run the kernel killed for reaching the cap."""
        name = "memory.events" if self.mode == "cgroup2" else "memory.oom_control"
        try:
            with open(os.path.join(self.path, name), encoding="utf-8") as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def remove(self) -> bool:
        """Remove the cgroup; False while it still has processes (or the kernel is not done)."""
        try:
            os.rmdir(self.path)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        return True

    async def aremove(self, *, within: float = 2.0) -> None:
        """Remove the cgroup once its processes are gone (they were killed: they are exiting)."""
        with anyio.move_on_after(within):
            while not self.remove():  # noqa: ASYNC110 - the kernel tells no one when it is empty
                await anyio.sleep(0.01)
            return
        log.warning("could not remove the sandbox cgroup %s; a later process will", self.path)

    def _write(self, name: str, value: str, *, optional: bool = False) -> None:
        try:
            with open(os.path.join(self.path, name), "w", encoding="ascii") as f:
                f.write(value)
        except FileNotFoundError:
            if not optional:
                raise


def _enable_memory(parent: str) -> None:
    """cgroup v2: children of `parent` get a memory controller only if its subtree enables it."""
    with open(os.path.join(parent, "cgroup.subtree_control"), encoding="ascii") as f:
        if "memory" in f.read().split():
            return
    with open(os.path.join(parent, "cgroup.subtree_control"), "w", encoding="ascii") as f:
        f.write("+memory")


