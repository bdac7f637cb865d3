"""A real PostgreSQL server for the cluster tests: its own cluster in a temporary directory, on
127.0.0.1 and a free port, started once per test session and stopped (by its pid file, through
`pg_ctl stop`) when the session ends.

The programs come from Debian's `postgresql` package (`.ci/run` installs it). `initdb` refuses to
run as root, so under root the server runs as the package's `postgres` user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.system_tools import hidden, missing

PURPOSE = "the cluster runtime's tests (apt-get install postgresql)"


def _bin_dir() -> Path | None:
    if hidden("postgres"):
        return None
    found = shutil.which("pg_ctl")
    if found is not None:
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a throwaway PostgreSQL; yields its URL (database `think`, trust auth on loopback)."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        missing(f"PostgreSQL (pg_ctl) is not installed, needed by {PURPOSE}")
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            missing(f"the postgres user is missing (the server cannot run as root), needed by {PURPOSE}")
    root = Path(tempfile.mkdtemp(prefix="think-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        os.chown(root, user.pw_uid, user.pw_gid)
    port = _free_port()

    def run(*command: str | Path) -> None:
        subprocess.run(_as_server_user([str(word) for word in command]), check=True, cwd=root,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    run(bin_dir / "initdb", "-A", "trust", "-U", "think", "-E", "UTF8", "--no-sync", "-D", data)
    options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c synchronous_commit=off "
               "-c full_page_writes=off -c max_connections=200")
    run(bin_dir / "pg_ctl", "-D", data, "-o", options, "-l", root / "log", "-w", "-t", "60", "start")
    try:
        run(bin_dir / "createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "think", "think")
        yield f"postgresql://think@127.0.0.1:{port}/think"
    finally:
        subprocess.run(_as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                                        "stop"]), check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       cwd=root)
        shutil.rmtree(root, ignore_errors=True)
