"""The narrow operations each file tool needs, so any storage can back the tools.

`Workspace` satisfies all of them. To point a tool at something else (a local directory, a remote
machine, a dict in a test), implement the two or three methods it uses:

    class Notes:                                   # ReadOps over a dict
        def __init__(self, files): self.files = files
        async def read_file(self, path): return self.files.get(path)
        async def read_bytes(self, path): return None if path not in self.files else self.files[path].encode()
        async def stat(self, path): ...

    read = create_read_tool(ops=Notes({"/a.txt": "hi"}))

Paths given to the operations are what the model wrote; normalizing them is the storage's job.
Missing files are `None`, not exceptions; other failures raise (a `WorkspaceError` becomes an
`{"error": ...}` result the model sees).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

EntryType = Literal["file", "directory"]


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One entry of a workspace. Times are Unix seconds."""

    path: str
    name: str
    type: EntryType
    mime_type: str
    size: int
    created_at: float
    updated_at: float

    def to_json(self) -> dict[str, Any]:
        """The original's `FileInfo` shape (times in milliseconds)."""
        return {"path": self.path, "name": self.name, "type": self.type, "mimeType": self.mime_type,
                "size": self.size, "createdAt": int(self.created_at * 1000),
                "updatedAt": int(self.updated_at * 1000)}


@runtime_checkable
class ReadOps(Protocol):
    async def read_file(self, path: str) -> str | None: ...
    async def read_bytes(self, path: str) -> bytes | None: ...
    async def stat(self, path: str) -> FileInfo | None: ...


@runtime_checkable
class WriteOps(Protocol):
    async def write_file(self, path: str, content: str) -> None: ...
    async def mkdir(self, path: str, *, recursive: bool = False) -> None: ...


@runtime_checkable
class EditOps(Protocol):
    async def read_file(self, path: str) -> str | None: ...
    async def write_file(self, path: str, content: str) -> None: ...


@runtime_checkable
class ListOps(Protocol):
    async def list(self, path: str = "/", *, limit: int = 1000, offset: int = 0) -> Sequence[FileInfo]:
        """Entries of a directory: directories first, then files, each by name."""
        ...


@runtime_checkable
class FindOps(Protocol):
    async def glob(self, pattern: str) -> Sequence[FileInfo]:
        """Entries whose path matches the glob, in path order."""
        ...


@runtime_checkable
class GrepOps(Protocol):
    async def glob(self, pattern: str) -> Sequence[FileInfo]: ...
    async def read_file(self, path: str) -> str | None: ...


@runtime_checkable
class DeleteOps(Protocol):
    async def rm(self, path: str, *, recursive: bool = False, force: bool = False) -> None: ...
