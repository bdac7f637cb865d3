"""Escape attempts from the `bash` tool. Each must be contained, leave the agent unharmed, and come
back to the model as a clear result. The only network target is a canary on 127.0.0.1."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import anyio

from tests.sandbox.conftest import Canary, needs_root, needs_sandbox
from think.sandbox.bash import BashOptions, run_bash
from think.sandbox.bwrap import _UID_BASE, _UID_SPAN
from think.workspace import Workspace

pytestmark = needs_sandbox


def sandbox_processes() -> list[str]:
    """Processes on the host still running as any sandbox uid.

    Zombies are left out: bwrap's namespace init can outlive its monitor for a moment as a zombie,
    reparented to the host's init, which reaps it; a zombie runs nothing and holds nothing.
    """
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                uid = os.stat(f"/proc/{name}").st_uid
                status = Path(f"/proc/{name}/status").read_text()
            except OSError:
                continue
            if _UID_BASE <= uid < _UID_BASE + _UID_SPAN and "\nState:\tZ" not in status:
                found.append(status.splitlines()[0])
    return found


async def still_works(ws: Workspace) -> None:
    out = await run_bash(ws, "echo alive")
    assert (out["stdout"], out["exitCode"]) == ("alive\n", 0)
    assert sandbox_processes() == []


async def test_no_network_reaches_the_canary(ws: Workspace, canary: Canary) -> None:
    script = (f"curl -sS -m 3 http://127.0.0.1:{canary.port}/ ; "
              f"(exec 3<>/dev/tcp/127.0.0.1/{canary.port}) ; "
              f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {canary.port}), timeout=3)' ; "
              "ip addr 2>/dev/null | grep -c inet ; true")
    out = await run_bash(ws, script)
    assert canary.hits == []
    assert "Couldn't connect" in out["stderr"] or "Failed to connect" in out["stderr"]
    assert "Connection refused" in out["stderr"] or "Network is unreachable" in out["stderr"]
    await still_works(ws)


async def test_host_files_are_out_of_reach(ws: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOKEN-7f3a")
    script = (f"cat /etc/passwd /etc/shadow /root/.bashrc {secret} ; ls /home /root ; "
              "cat /proc/1/root/etc/passwd ; ls /proc/1/root/ ; grep -rs TOKEN-7f3a / --exclude-dir=proc "
              "--exclude-dir=sys --exclude-dir=usr ; "
              f"ln -s {secret} link ; cat link ; ln -s /etc/passwd passwd-link ; id -u ; true")
    out = await run_bash(ws, script)
    assert "TOKEN-7f3a" not in out["stdout"] and "root:x:0:0" not in out["stdout"]
    assert "/etc/passwd: No such file or directory" in out["stderr"]
    assert out["stdout"].strip().endswith("1000")  # not root inside either
    assert sorted(out["errors"]) == ["/link: not written back, it is a symlink",
                                     "/passwd-link: not written back, it is a symlink"]
    assert await ws.glob("**") == []
    await still_works(ws)


async def test_kernel_settings_cannot_be_written(ws: Workspace) -> None:
    core_pattern = _read(Path("/proc/sys/kernel/core_pattern"))
    out = await run_bash(ws, "echo 1 > /proc/sys/vm/drop_caches; echo '|/evil' > /proc/sys/kernel/core_pattern; "
                             "unshare -U -r true; echo unshare=$?; mount -t tmpfs x /tmp; echo mount=$?")
    assert out["stderr"].count("Read-only file system") == 2
    assert "unshare=1" in out["stdout"] and "mount=32" in out["stdout"]
    assert _read(Path("/proc/sys/kernel/core_pattern")) == core_pattern
    await still_works(ws)


async def test_a_fork_bomb_is_contained(ws: Workspace) -> None:
    started = time.monotonic()
    out = await run_bash(ws, ":(){ :|:& };:; sleep 1; echo survived", options=BashOptions(timeout=4))
    assert time.monotonic() - started < 15
    assert "Resource temporarily unavailable" in out["stderr"]
    assert out["exitCode"] in (0, 124)
    await still_works(ws)


async def test_two_gigabytes_of_memory_are_refused(ws: Workspace) -> None:
    out = await run_bash(ws, "python3 -c 'b = bytearray(2 * 1024**3); print(len(b))'; echo exit=$?")
    assert "MemoryError" in out["stderr"] and "exit=1" in out["stdout"]
    await still_works(ws)


async def test_an_infinite_loop_is_killed_at_the_timeout(ws: Workspace) -> None:
    started = time.monotonic()
    out = await run_bash(ws, "echo start; while :; do :; done", options=BashOptions(timeout=2))
    elapsed = time.monotonic() - started
    assert 2 <= elapsed < 8
    assert out["exitCode"] == 124 and out["stdout"] == "start\n"
    assert out["stderr"] == "bash: killed after the 2 s time limit (exit code 124)"
    await still_works(ws)


async def test_ten_megabytes_of_output_are_capped(ws: Workspace) -> None:
    out = await run_bash(ws, "head -c 10000000 /dev/zero | tr '\\0' a; head -c 3000000 /dev/zero | tr '\\0' b >&2")
    assert out["stdout"] == "a" * 64_000 + "\n... (9.5 MB truncated)"
    assert out["stderr"] == "b" * 64_000 + "\n... (2.8 MB truncated)"
    await still_works(ws)


async def test_a_two_megabyte_file_is_not_written_back(ws: Workspace) -> None:
    out = await run_bash(ws, "head -c 2000000 /dev/zero > big.bin; echo code=$?; ls -l big.bin; echo ok > small.txt")
    assert "File size limit exceeded" in out["stderr"]
    assert out["errors"] == ["/big.bin: not written back, larger than 1.0 MB"]
    assert out["changedFiles"]["created"] == ["/small.txt"]
    assert not await ws.exists("/big.bin")
    await still_works(ws)


async def test_twelve_hundred_files_stop_at_the_limit(ws: Workspace) -> None:
    out = await run_bash(ws, "for i in $(seq 1 1200); do echo $i > f$i.txt || break; done; echo done")
    info = await ws.info()
    assert 900 <= info["fileCount"] <= 1000
    assert "No space left on device" in out["stderr"] or any("1000-file limit" in e for e in out.get("errors", []))
    await still_works(ws)


async def test_background_processes_do_not_outlive_the_run(ws: Workspace) -> None:
    # Durations unique to this run, so no other process on the machine can be taken for ours.
    tag = f"{secrets.randbelow(900_000) + 100_000}"
    started = time.monotonic()
    out = await run_bash(ws, f"(sleep 300.{tag} &) ; nohup sleep 301.{tag} > /dev/null 2>&1 & disown; "
                             f"setsid sleep 302.{tag} & (trap '' HUP TERM; sleep 303.{tag}) > /dev/null 2>&1 & "
                             "echo spawned")
    assert out["stdout"] == "spawned\n" and time.monotonic() - started < 10
    # The run's PID namespace is gone with it; its processes are reaped at once, not in 300 s.
    for _ in range(250):  # 5 s at most
        if not (left := _sleepers(tag)):
            break
        await anyio.sleep(0.02)
    assert left == []
    await still_works(ws)


def _sleepers(tag: str) -> list[Path]:
    return [line for line in Path("/proc").glob("[0-9]*/cmdline") if f".{tag}".encode() in _read(line)
            and _read(line).startswith(b"sleep\x00")]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


@needs_root
async def test_an_allowlist_opens_exactly_what_it_names(ws: Workspace, canary: Canary) -> None:
    options = BashOptions(network=[f"http://127.0.0.1:{canary.port}/allowed/"], timeout=15)
    out = await run_bash(ws, f"curl -sS -m 5 http://127.0.0.1:{canary.port}/allowed/x ; echo ; "
                             f"curl -sS -m 5 http://127.0.0.1:{canary.port}/other ; echo ; "
                             f"(exec 3<>/dev/tcp/127.0.0.1/{canary.port}) ; echo direct=$?", options=options)
    assert out["stdout"].startswith("canary\nthink sandbox: http://127.0.0.1:")
    assert "is not on the sandbox's network allowlist" in out["stdout"] and "direct=1" in out["stdout"]
    assert len(canary.hits) == 1 and canary.hits[0].startswith(b"GET /allowed/x HTTP/1.1\r\n")


@needs_root
async def test_an_allowlisted_name_cannot_reach_private_addresses(ws: Workspace, canary: Canary) -> None:
    options = BashOptions(network=[f"localhost:{canary.port}", "example.com"], timeout=15)
    out = await run_bash(ws, f"curl -sS -m 5 http://localhost:{canary.port}/ ; echo ; "
                             f"curl -sS -m 5 http://127.0.0.1:{canary.port}/", options=options)
    assert "localhost resolves to a private or loopback address" in out["stdout"]
    assert canary.hits == []
