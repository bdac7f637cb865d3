"""`SandboxRoot`: the directory that becomes a sandbox's `/`: writing the snapshot into it, and
walking and reading what the script left there, never following a link it made."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

RESERVED_ROOTS = ("bin", "dev", "lib", "lib64", "proc", "sbin", "sys", "tmp", "usr")
"""Top-level names the sandbox mounts or links over; workspace entries there are not mounted."""


@dataclass(slots=True)
class SandboxRoot:
    """The directory that becomes `/` in the sandbox, and who owns what is written into it."""

    path: str
    uid: int | None
    """The run's uid (root only); None when the sandbox runs as the current user."""

    def _host(self, rel: str) -> str:
        return self.path + rel  # rel is a normalized absolute workspace path

    def add_dir(self, rel: str) -> None:
        host = self._host(rel)
        os.mkdir(host, 0o755)
        if self.uid is not None:
            os.chown(host, self.uid, self.uid, follow_symlinks=False)

    def add_file(self, rel: str, data: bytes) -> tuple[int, int, int]:
        """Write a file; returns `(size, mtime_ns, inode)` to recognise it unchanged later."""
        fd = os.open(self._host(rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if self.uid is not None:
                os.fchown(fd, self.uid, self.uid)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        return st.st_size, st.st_mtime_ns, st.st_ino

    def walk(self, unreadable: list[str]) -> Iterator[tuple[str, os.stat_result]]:
        """Every entry under the root except the reserved top-level names, without following links.

        A directory the script made unreadable (`chmod 000`) is opened up first; one that still
        cannot be listed is appended to `unreadable`, and nothing below it is reported.
        """
        pending = ["/"]
        while pending:
            directory = pending.pop()
            host = self.path + (directory if directory != "/" else "")
            try:
                entries = list(os.scandir(host))
            except PermissionError:
                try:
                    os.chmod(host, 0o755)
                    entries = list(os.scandir(host))
                except OSError:
                    unreadable.append(directory)
                    continue
            except OSError:
                unreadable.append(directory)
                continue
            for entry in entries:
                rel = f"/{entry.name}" if directory == "/" else f"{directory}/{entry.name}"
                if directory == "/" and entry.name in RESERVED_ROOTS:
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:  # such as a path longer than the host allows
                    unreadable.append(rel)
                    continue
                yield rel, st
                if stat.S_ISDIR(st.st_mode):
                    pending.append(rel)

    def read_file(self, rel: str, limit: int) -> bytes | None:
        """The content of a regular file (never following a link), or None if it is not one or is
        larger than `limit`."""
        host = self._host(rel)
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(host, flags)
        except PermissionError:  # chmod 000 by the script; only matters when not running as root
            try:
                os.chmod(host, 0o644, follow_symlinks=False)
                fd = os.open(host, flags)
            except OSError:
                return None
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                return None
            chunks = []
            remaining = limit + 1
            while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 20))):
                chunks.append(chunk)
                remaining -= len(chunk)
            data = b"".join(chunks)
            return data if len(data) <= limit else None
        finally:
            os.close(fd)
