"""Hardened mode: the sandbox host's interpreter workers run under bubblewrap.

`hardened_worker(directory)` writes an executable wrapper there and returns its path; give it to
`SandboxHost(binary=…)` (or `create_execute_tool(…, worker_binary=…)`). Monty's pool then starts
every worker through it, and it `exec`s the real `monty` worker binary inside:

* as root, `setpriv` to an unprivileged uid with no groups and no capabilities, and `prlimit`
  caps (address space, processes, open files, file size, no core dumps) — bwrap run by real root
  is not a privilege drop on its own;
* bwrap: every namespace unshared (no network at all: the worker only talks to its parent over
  the inherited pipes), user namespaces disabled inside, `/usr` and the worker binary read-only,
  a fresh `/proc`, a minimal `/dev`, a small private `/tmp`, no `/etc`, `/home` or `/root`, an
  empty environment, the seccomp filter of the bash sandbox (`think.sandbox.seccomp`), and
  `--die-with-parent`.

The interpreter's own limits (heap, time, recursion) still apply inside; these are the second
layer, for a bug in the interpreter. The pool keeps workers warm, so the cost is paid when a
worker starts, not per execution (research/sandboxes.md §3.6).
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import tempfile
from pathlib import Path

from pydantic_monty._binary import find_monty_binary

from think.sandbox.bwrap import SandboxUnavailable, find_tools
from think.sandbox.seccomp import seccomp_filter

WORKER_UID = 2_147_000_000
"""The uid workers run as when the agent runs as root (no account has it)."""
ADDRESS_SPACE = 4 * 1024 * 1024 * 1024
"""Per worker; the interpreter's heap limit (64 MB by default) is far below it."""


def hardened_worker(directory: str | Path | None = None, *, monty_binary: str | None = None) -> str:
    """Write the wrapper, the worker binary it runs and the compiled seccomp filter into
    `directory` (default: a new directory under the system's temporary directory, which the
    worker's uid can traverse); its path. Raises `SandboxUnavailable` when bubblewrap or the
    tools it needs are missing."""
    tools = find_tools()
    source = monty_binary or find_monty_binary()
    if not os.access(source, os.X_OK):
        raise SandboxUnavailable(f"the Monty worker binary {source!r} is not executable")
    folder = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="think-monty-"))
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    # The worker's uid must be able to read the binary: a copy (or a link) next to the wrapper,
    # since the installed one usually sits under /root or a 0700 virtualenv.
    binary = str(folder / "monty")
    if not Path(binary).exists():
        try:
            os.link(source, binary)
        except OSError:
            shutil.copyfile(source, binary)
    Path(binary).chmod(0o755)
    host: list[str] = [tools.prlimit, f"--as={ADDRESS_SPACE}", "--nproc=256", "--nofile=256",
                       f"--fsize={64 * 1024 * 1024}", "--core=0", "--"]
    if os.geteuid() == 0:
        if tools.setpriv is None:
            raise SandboxUnavailable("hardened mode as root needs setpriv (util-linux)")
        host += [tools.setpriv, f"--reuid={WORKER_UID}", f"--regid={WORKER_UID}", "--clear-groups",
                 "--inh-caps=-all", "--"]
    sandbox = [tools.bwrap, "--unshare-all", "--unshare-user", "--uid", "1000", "--gid", "1000",
               "--disable-userns", "--die-with-parent", "--new-session", "--clearenv",
               "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
               "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
               "--dev", "/dev", "--size", str(16 * 1024 * 1024), "--tmpfs", "/tmp",
               "--ro-bind", binary, "/monty", "--chdir", "/"]
    redirect = ""  # the filter is opened by the shell, still as the agent's user
    compiled = seccomp_filter()
    if compiled is not None:
        filter_path = folder / "worker.seccomp"
        filter_path.write_bytes(compiled)
        sandbox += ["--seccomp", "9"]
        redirect += f" 9<{shlex.quote(str(filter_path))}"
    script = ("#!/bin/sh\n# The Monty worker under bubblewrap (think.sandbox.hardened).\n"
              f"exec {shlex.join([*host, *sandbox])} /monty \"$@\"{redirect}\n")
    wrapper = folder / "monty-hardened"
    wrapper.write_text(script)
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(wrapper)


_shared: str | None = None


def shared_hardened_worker() -> str:
    """One wrapper per process (written on first use), for `create_execute_tool(hardened=True)`."""
    global _shared
    if _shared is None or not Path(_shared).exists():
        _shared = hardened_worker()
    return _shared


__all__ = ["hardened_worker", "shared_hardened_worker"]
