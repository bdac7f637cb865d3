"""Caps that hold for a whole bash run: memory of all its processes together, /dev/shm, and no host
paths visible inside. Each test tries to get past the cap."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.sandbox.conftest import needs_root, needs_sandbox
from think.sandbox import memory
from think.sandbox.bash import BashOptions, create_bash_tool, run_bash
from think.sandbox.bwrap import Limits, run_script, sandbox_root
from think.workspace import Workspace

pytestmark = needs_sandbox

MiB = 1 << 20

HOLD = """
cat > /tmp/hold.py <<'PY'
import fcntl, os, sys, time
block = b"x" * (100 << 20)  # 100 MiB, every page written
mine = open(f"/tmp/held.{sys.argv[1]}", "w")
fcntl.flock(mine, fcntl.LOCK_EX)  # held while this process lives: a killed one's file stays, its lock goes

def alive(name):
    with open("/tmp/" + name) as other:
        try:
            fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False

deadline = time.monotonic() + 20
while sum(alive(n) for n in os.listdir("/tmp") if n.startswith("held.")) < 4:  # until all four hold theirs
    if time.monotonic() > deadline:
        sys.exit("gave up waiting for the others")
    time.sleep(0.01)
print("all held", sys.argv[1])
PY
for i in 1 2 3 4; do python3 /tmp/hold.py $i & done
wait -n; first=$?
kill $(jobs -p) 2>/dev/null; wait
echo "first exit $first"
"""
"""Four processes that each touch 100 MiB and wait until all four hold theirs at once: 400 MiB
together, under a 256 MiB cap for the run and a 512 MiB address space for each process. A process
counts as holding while it lives (its flock on its file), not while its file exists: the files of
processes the kernel killed stay behind, and counting them let the survivors report "all held"."""

FORK = """
import os, time
children = []
try:
    for _ in range(40):
        pid = os.fork()
        if pid == 0:
            time.sleep(30)  # killed below
            os._exit(0)
        children.append(pid)
except OSError as exc:
    print("refused after", len(children), type(exc).__name__)
for pid in children:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
"""

CAPPED = BashOptions(timeout=30, run_memory_bytes=256 * MiB, memory_bytes=512 * MiB)


def _cgroup_mode() -> str:
    return memory.detect()[0]


async def test_the_memory_cap_holds_for_all_processes_of_a_run_together(ws: Workspace) -> None:
    out = await run_bash(ws, HOLD, options=CAPPED)
    assert "all held" not in out["stdout"], out
    if _cgroup_mode() == "budget":
        assert "MemoryError" in out["stderr"], out
    else:
        assert "first exit 137" in out["stdout"], out  # the kernel killed one of them
        assert re.search(r"bash: out of memory: the run's processes together reached the 256\.0 MB memory limit, "
                         r"and (1 process was|[234] processes were) killed$", out["stderr"]), out
    description = create_bash_tool(ws, CAPPED).description
    assert "memory: " in description and "256.0 MB for all processes of a run together" in description, description


@needs_root
async def test_a_cgroup_bounds_the_run_where_the_machine_allows_one(ws: Workspace) -> None:
    mode, parent = memory.detect()
    if mode == "budget":
        pytest.skip("no writable memory cgroup here (cgroup v2 delegated, or v1 as root): rlimit budget only")
    before = {name for name in os.listdir(parent) if name.startswith("think-bash-")}
    # the same four processes with room for them: the cap is what stopped them, not the script
    out = await run_bash(ws, HOLD, options=BashOptions(timeout=30, run_memory_bytes=1024 * MiB,
                                                       memory_bytes=512 * MiB))
    # one "all held" proves it: that process saw all four alive with their memory touched
    assert re.search(r"^all held [1-4]$", out["stdout"], re.MULTILINE), out
    assert "first exit 0" in out["stdout"] and "out of memory" not in out["stderr"], out
    assert {name for name in os.listdir(parent) if name.startswith("think-bash-")} <= before  # removed again
    assert f"(a {mode} limit: past it the kernel kills a process)" in create_bash_tool(ws, CAPPED).description


async def test_the_rlimit_budget_bounds_the_run_where_no_cgroup_can_be_made(ws: Workspace) -> None:
    budget = BashOptions(timeout=30, run_memory_bytes=256 * MiB, memory_bytes=512 * MiB, memory_mode="budget")
    out = await run_bash(ws, HOLD, options=budget)
    assert "all held" not in out["stdout"] and "MemoryError" in out["stderr"], out
    # processes × address space fits the cap: 16 processes (bwrap's 2 among them) of 16 MiB each
    out = await run_bash(ws, f"ulimit -v; ulimit -u; python3 -c '{FORK}'", options=budget)
    lines = out["stdout"].split()
    assert lines[:2] == [str(16 * 1024), "16"], out
    assert lines[2:] == ["refused", "after", lines[4], "BlockingIOError"] and int(lines[4]) <= 13, out
    description = create_bash_tool(ws, budget).description
    assert "at most 16 processes (the sandbox's own 2 included) of 16.0 MB address space each, 256.0 MB in all" \
        in description


async def test_dev_shm_has_a_size_cap_and_dev_itself_is_read_only(ws: Workspace) -> None:
    # 1 MiB files (the file size cap) until 40 MiB are written or the filesystem is full
    script = ("for i in $(seq 40); do head -c 1048576 /dev/zero > /dev/shm/f$i || break; done; "
              "du -sk /dev/shm | cut -f1; echo x > /dev/made && echo dev-writable; echo ok > /dev/null; echo end")
    out = await run_bash(ws, script)
    used_kib = int(out["stdout"].split()[0])
    assert used_kib <= Limits().shm_bytes // 1024, out
    assert "No space left on device" in out["stderr"], out
    assert "dev-writable" not in out["stdout"] and "Read-only file system" in out["stderr"], out
    assert out["stdout"].endswith("end\n")


async def test_no_host_path_is_visible_inside() -> None:
    async with sandbox_root(disk_bytes=16 * MiB, max_inodes=100) as root:
        result = await run_script(root, "tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/self/mountinfo; "
                                        "tr '\\0' ' ' < /proc/1/environ", limits=Limits(timeout=20))
        inside = result.stdout.decode()
        assert result.exit_code == 0 and "/proc/self/mountinfo" not in result.stderr.decode(), result
        cmdline = inside.partition("\n")[0]
        assert "bwrap" in cmdline  # what PID 1 is
        # without root the root directory is a bind mount, which mountinfo shows with its source
        shown = inside if root.uid is not None else cmdline
        assert root.path not in shown and os.path.dirname(root.path) not in shown, shown
        assert "think-bash-" not in shown, shown


@needs_root
@pytest.mark.parametrize("when", ["at start", "while it runs"])
def test_a_run_cut_off_by_kill_9_is_cleared_by_the_next_process(when: str) -> None:
    """SIGKILL the agent's process as its sandbox starts (before bubblewrap can tie itself to its
    parent) or while the script runs: the next process that runs bash kills what is left, removes
    the run's cgroup and unmounts and deletes its root directory."""
    mode, parent = memory.detect()
    if mode == "budget":
        pytest.skip("no writable memory cgroup here (cgroup v2 delegated, or v1 as root): rlimit budget only")
    root = Path(__file__).resolve().parents[2]
    script = ("import anyio\n"
              "from think.sandbox.bash import run_bash\n"
              "from think.storage import Database\n"
              "from think.workspace import Workspace\n"
              "anyio.run(lambda: run_bash(Workspace(Database(':memory:')), 'sleep 60'))\n")
    env = {**os.environ, "PYTHONPATH": str(root)}
    process = subprocess.Popen([sys.executable, "-c", script], cwd=root, env=env)
    try:
        ours = re.compile(rf"think-bash-{process.pid}-\d+")
        deadline = time.monotonic() + 30
        while True:
            groups = [name for name in os.listdir(parent) if ours.fullmatch(name)]
            if groups and ((when == "at start" and _procs(parent, groups[0]))
                           or "sleep" in _commands(_procs(parent, groups[0]))):
                break
            assert process.poll() is None and time.monotonic() < deadline, "the run did not start"
            time.sleep(0.005)
    finally:
        process.kill()
        process.wait()
    group = groups[0]
    left = [name for name in os.listdir(tempfile.gettempdir()) if name.startswith(f"think-bash-{process.pid}-")]
    assert left and _mounted(left[0])  # the killed process could not unmount it
    survivors = _procs(parent, group)
    subprocess.run([sys.executable, "-c", script.replace("sleep 60", "true")], cwd=root, env=env, check=True,
                   capture_output=True, timeout=60)
    still = [(pid, _state(pid)) for pid in survivors if _state(pid) not in ("", "Z")]
    assert not still, still
    assert group not in os.listdir(parent)
    assert not _mounted(left[0]) and left[0] not in os.listdir(tempfile.gettempdir())


def _state(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rpartition(")")[2].split()[0]
    except OSError:
        return ""


def _commands(pids: list[str]) -> list[str]:
    names = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                names.append(f.read().split("(", 1)[1].split(")", 1)[0])
        except (OSError, IndexError):
            continue
    return names


def _mounted(name: str) -> bool:
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        return f"/{name}/root " in f.read()


def _procs(parent: str, group: str) -> list[str]:
    try:
        with open(os.path.join(parent, group, "cgroup.procs"), encoding="ascii") as f:
            return f.read().split()
    except FileNotFoundError:
        return []
