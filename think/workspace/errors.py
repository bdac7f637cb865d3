"""Workspace errors. Each carries the POSIX-style `code` the message starts with, and the `path`.

* ThinkError
  * WorkspaceError          base; `.code` (such as "ENOENT") and `.path`
    * InvalidPath           EINVAL / ENAMETOOLONG: NUL bytes, names too long, bad globs
    * FileNotFound          ENOENT
    * FileExists            EEXIST
    * NotADirectory         ENOTDIR
    * IsADirectory          EISDIR
    * DirectoryNotEmpty     ENOTEMPTY
    * QuotaExceeded         EFBIG (one file too large) / ENOSPC (the workspace would be too large)
"""

from __future__ import annotations

from think.errors import ThinkError


class WorkspaceError(ThinkError):
    """A workspace operation that cannot be done; the message is written for people and models."""

    code = "EIO"

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class InvalidPath(WorkspaceError):
    code = "EINVAL"


class FileNotFound(WorkspaceError):
    code = "ENOENT"


class FileExists(WorkspaceError):
    code = "EEXIST"


class NotADirectory(WorkspaceError):
    code = "ENOTDIR"


class IsADirectory(WorkspaceError):
    code = "EISDIR"


class DirectoryNotEmpty(WorkspaceError):
    code = "ENOTEMPTY"


class QuotaExceeded(WorkspaceError):
    """A write would pass `max_file_bytes` (code EFBIG) or `max_total_bytes` (code ENOSPC)."""

    def __init__(self, message: str, *, path: str, code: str, size: int, limit: int) -> None:
        super().__init__(message, path=path)
        self.code = code
        self.size = size
        self.limit = limit
