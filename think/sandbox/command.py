"""The command line of one sandbox run: host-side wrappers, then bubblewrap's own arguments.

Host side, in order: join the run's memory cgroup (`think.sandbox.memory`), enter the allowlist
network namespace, set rlimits (`prlimit`), drop to the run's uid (`setpriv`), then `bwrap`.
bubblewrap reads its options from a file descriptor (`--args`), not its argv: its process is
PID 1 inside the sandbox, and its argv there would show host paths (the sandbox root's) to the
script in `/proc/1/cmdline`; only the command (`/bin/bash -c <script>`) stays on it.

Inside: the root directory at `/`, `/usr` read-only, a fresh `/proc` with `/proc/sys`
read-only, a minimal `/dev` made read-only once `/dev/shm` (a sized tmpfs) is on it, and a sized
`/tmp`: every writable place has a size.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from think.sandbox.bwrap import Limits, _Tools
    from think.sandbox.memory import MemoryPlan, RunCgroup
    from think.sandbox.root import SandboxRoot


def host_command(tools: _Tools, root: SandboxRoot, script: str, limits: Limits, memory: MemoryPlan, *,
                 args_fd: int, netns_fd: int | None, cgroup: RunCgroup | None) -> list[str]:
    """The argv to spawn: wrappers, then `bwrap --args <args_fd> /bin/bash -c <script>` (the
    options are in `bwrap_args`; the command itself must stay on bwrap's command line)."""
    fsize = -(-(limits.max_file_bytes + 1) // 1024) * 1024  # a file that hits it is visibly too large
    command: list[str] = cgroup.join_command() if cgroup is not None else []
    if netns_fd is not None:
        assert tools.nsenter is not None
        command += [tools.nsenter, f"--net=/proc/self/fd/{netns_fd}", "--"]
    command += [tools.prlimit, f"--as={memory.per_process}", f"--fsize={fsize}",
                f"--nproc={memory.processes}", f"--nofile={limits.max_open_files}", "--core=0",
                f"--cpu={int(limits.timeout) + 2}", "--"]
    if root.uid is not None:
        assert tools.setpriv is not None
        command += [tools.setpriv, f"--reuid={root.uid}", f"--regid={root.uid}", "--clear-groups",
                    "--inh-caps=-all", "--"]
    return [*command, tools.bwrap, "--args", str(args_fd), "/bin/bash", "-c", script]


def bwrap_args(root: SandboxRoot, cwd: str, limits: Limits, *, seccomp_fd: int | None, shared_net: bool,
               env: Mapping[str, str]) -> list[str]:
    """bubblewrap's options, written NUL-separated to the `--args` descriptor."""
    args = ["--unshare-all"]
    if shared_net:
        args.append("--share-net")  # the namespace nsenter put us in, whose only door is the proxy
    args += ["--unshare-user", "--uid", "1000", "--gid", "1000", "--disable-userns", "--die-with-parent",
             "--new-session", "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    args += ["--bind", root.path, "/", "--ro-bind", "/usr", "/usr",
             "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
             "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
             "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
             "--dev", "/dev", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
             "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp", "--chdir", cwd]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    return args


def encode_args(args: list[str]) -> bytes:
    """The `--args` format: each argument followed by a NUL (so none may hold one)."""
    if any("\0" in arg for arg in args):
        raise ValueError("embedded null byte")
    return b"".join(arg.encode("utf-8", "surrogateescape") + b"\0" for arg in args)
