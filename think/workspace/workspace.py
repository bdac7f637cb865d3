"""`Workspace`: a virtual filesystem in the agent's SQLite database.

    ws = Workspace(db)                         # every Think agent has one as `self.workspace`
    await ws.write_file("/notes/todo.md", "- ship it\\n")
    await ws.read_file("notes/../notes/todo.md")   # "- ship it\\n"
    [f.path for f in await ws.glob("**/*.md")]     # ["/notes/todo.md"]

Files and directories are rows of `think_workspace`; text and binary content alike are bytes.
Files of `inline_threshold` bytes or more spill to a blob store (a directory next to the database
by default, or any `BlobStore` such as an S3 bucket), transparently. Paths are normalized
(`think.workspace.paths`): nothing a caller writes can name anything above `/`, and the
workspace never touches the host filesystem except through its blob store.

SQLite work runs inline on the event loop in short transactions; only blob I/O awaits. Changes are
reported, after they are committed, to listeners registered with `on_change`.
"""

from __future__ import annotations

import inspect
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import anyio

from think.storage import Database, Row, migrate
from think.workspace.blobs import BlobStore, LocalBlobStore
from think.workspace.errors import (
    DirectoryNotEmpty,
    FileExists,
    FileNotFound,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    QuotaExceeded,
    WorkspaceError,
)
from think.workspace.media import detect_media_type, format_size
from think.workspace.operations import EntryType, FileInfo
from think.workspace.paths import (
    glob_prefix,
    glob_regex,
    is_within,
    name_of,
    normalize_path,
    normalize_pattern,
    parent_of,
)
from think.workspace.search import SearchResult, search_files
from think.workspace.table import MIGRATIONS, FileTable

log = logging.getLogger("think.workspace")

DEFAULT_INLINE_THRESHOLD = 1_500_000
DEFAULT_MAX_FILE_BYTES = 100 * 1024 * 1024
DEFAULT_MAX_TOTAL_BYTES = 1024 * 1024 * 1024
_NAMESPACE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
# `Workspace.list` shadows the builtin inside the class body, so annotations there use these.
_FileList = list[FileInfo]
_Changes = list["WorkspaceChange"]
_Strs = list[str]
_Contents = list[tuple[FileInfo, bytes]]


@dataclass(frozen=True, slots=True)
class WorkspaceChange:
    """One committed change. `kind` is `create`, `update` or `delete`."""

    kind: Literal["create", "update", "delete"]
    path: str
    entry_type: EntryType

    def to_json(self) -> dict[str, str]:
        """The original's `WorkspaceChangeEvent`: `{type, path, entryType}`."""
        return {"type": self.kind, "path": self.path, "entryType": self.entry_type}


ChangeListener = Callable[[WorkspaceChange], "Awaitable[None] | None"]


@dataclass(slots=True)
class BatchResult:
    """What `Workspace.apply` did; `errors` holds one line per change it refused."""

    changes: list[WorkspaceChange] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _is_memory(path: str) -> bool:
    return path in ("", ":memory:") or "mode=memory" in path


class Workspace:
    """A filesystem of text and binary files stored in one SQLite database (see the module docs)."""

    def __init__(
        self,
        db: Database,
        *,
        namespace: str = "default",
        blobs: BlobStore | None = None,
        inline_threshold: int | None = DEFAULT_INLINE_THRESHOLD,
        max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
        max_total_bytes: int | None = DEFAULT_MAX_TOTAL_BYTES,
    ) -> None:
        """`blobs` defaults to a directory `<database file>.blobs/` (none for in-memory databases,
        whose files then all stay inline). `inline_threshold=None` never spills. The two quotas
        raise `QuotaExceeded`; None lifts them."""
        if not _NAMESPACE.match(namespace):
            raise ValueError(f"invalid workspace namespace {namespace!r}: a letter, then letters, digits or _")
        self.db = db
        self.namespace = namespace
        self.table = FileTable(db, namespace)
        if blobs is None and not _is_memory(db.path):
            blobs = LocalBlobStore(f"{db.path}.blobs")
        self.blobs = blobs
        self.inline_threshold = inline_threshold
        self.max_file_bytes = max_file_bytes
        self.max_total_bytes = max_total_bytes
        self._listeners: list[ChangeListener] = []
        self._ready = False

    # ---- change events ---------------------------------------------------------------------------

    def on_change(self, listener: ChangeListener) -> Callable[[], None]:
        """Call `listener(change)` after every committed change; returns a function that unsubscribes.

        A listener may be sync or async; it runs in the task that made the change, so keep it short
        (hand the event to a queue for slow work). Exceptions are logged and swallowed.
        """
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    async def _emit(self, changes: Iterable[WorkspaceChange]) -> None:
        if not self._listeners:
            return
        for change in changes:
            for listener in tuple(self._listeners):
                try:
                    result = listener(change)
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("a workspace change listener failed")

    # ---- reading ---------------------------------------------------------------------------------

    def _check_ready(self) -> None:
        if not self._ready:
            migrate(self.db, MIGRATIONS)  # a no-op when the agent's start-up already ran it
            self._ready = True

    @staticmethod
    def _info(row: Row) -> FileInfo:
        return FileInfo(row["path"], row["name"], row["type"], row["mime_type"], row["size"],
                        row["created_at"], row["modified_at"])

    async def stat(self, path: str) -> FileInfo | None:
        """The entry at `path`, or None."""
        self._check_ready()
        p = normalize_path(path)
        if p == "/":
            return FileInfo("/", "", "directory", "inode/directory", 0, 0.0, 0.0)
        row = self.table.row(p)
        return None if row is None else self._info(row)

    async def exists(self, path: str) -> bool:
        return await self.stat(path) is not None

    async def read_bytes(self, path: str) -> bytes | None:
        """The content of the file at `path`, or None if there is none. `IsADirectory` for directories."""
        self._check_ready()
        p = normalize_path(path)
        row = None if p == "/" else self.table.row(p)
        if p == "/" or (row is not None and row["type"] == "directory"):
            raise IsADirectory(f"EISDIR: {p} is a directory", path=p)
        if row is None:
            return None
        return await self._load(row)

    async def read_file(self, path: str) -> str | None:
        """The content of the file at `path` as text (UTF-8; undecodable bytes become U+FFFD)."""
        data = await self.read_bytes(path)
        return None if data is None else data.decode("utf-8", "replace")

    async def _load(self, row: Row) -> bytes:
        if row["blob_key"] is None:
            return self.table.content(row["path"])
        if self.blobs is None:
            raise WorkspaceError(f"EIO: {row['path']} is in a blob store, and this workspace has none",
                                 path=row["path"])
        data = await self.blobs.get(row["blob_key"])
        if data is None:
            raise WorkspaceError(f"EIO: the content of {row['path']} is missing from the blob store",
                                 path=row["path"])
        return data

    async def list(self, path: str = "/", *, limit: int = 1000, offset: int = 0) -> _FileList:
        """The entries of a directory: directories first, then files, each sorted by name."""
        self._check_ready()
        p = normalize_path(path)
        self._require_dir(p)
        return [self._info(r) for r in self.table.children(p, limit=max(0, limit), offset=max(0, offset))]

    def _require_dir(self, p: str) -> None:
        if p == "/":
            return
        row = self.table.row(p)
        if row is None:
            raise FileNotFound(f"ENOENT: no such directory: {p}", path=p)
        if row["type"] != "directory":
            raise NotADirectory(f"ENOTDIR: {p} is not a directory", path=p)

    async def glob(self, pattern: str) -> _FileList:
        """Entries whose path matches `pattern`, in path order.

        `*` and `?` match within one path segment, `**` across segments, `[…]` a character class
        and `{a,b}` either alternative. A relative pattern is taken from the root.
        """
        self._check_ready()
        normalized = normalize_pattern(pattern)
        prefix = glob_prefix(normalized)
        regex = glob_regex(normalized)
        if not prefix.endswith("/"):  # no wildcard: one path
            row = self.table.row(prefix)
            return [self._info(row)] if row is not None and regex.match(prefix) else []
        rows = self.table.under(prefix.rstrip("/") or "/")
        return [self._info(r) for r in rows if regex.match(r["path"])]

    async def search(self, query: str, *, include: str = "**/*", fixed: bool = False, case_sensitive: bool = True,
                     context_lines: int = 0, max_matches: int = 200) -> SearchResult:
        """Lines matching a regex (or, with `fixed`, a plain string) in the files matching `include`.

        Files over 1 MB are skipped and counted; raises `InvalidQuery` for a bad regex.
        """
        return await search_files(self, query, include=include, fixed=fixed, case_sensitive=case_sensitive,
                                  context_lines=context_lines, max_matches=max_matches)

    async def info(self) -> dict[str, int]:
        """File and directory counts, total bytes, and how many files live in the blob store."""
        self._check_ready()
        row = self.table.summary()
        return {"fileCount": row["files"], "directoryCount": row["directories"],
                "totalBytes": row["total_bytes"], "blobFileCount": row["blob_files"]}

    # ---- writing ---------------------------------------------------------------------------------

    def _check_file_size(self, p: str, size: int) -> None:
        if self.max_file_bytes is not None and size > self.max_file_bytes:
            raise QuotaExceeded(
                f"EFBIG: {p} would be {format_size(size)}, over the workspace's "
                f"{format_size(self.max_file_bytes)} limit per file", path=p, code="EFBIG",
                size=size, limit=self.max_file_bytes)

    def _check_total(self, p: str, added: int, current: int | None = None) -> None:
        if self.max_total_bytes is None or added <= 0:
            return
        total = (self.table.total_bytes() if current is None else current) + added
        if total > self.max_total_bytes:
            raise QuotaExceeded(
                f"ENOSPC: writing {p} would bring the workspace to {format_size(total)}, over its "
                f"{format_size(self.max_total_bytes)} limit", path=p, code="ENOSPC",
                size=total, limit=self.max_total_bytes)

    def _spills(self, size: int) -> bool:
        return self.blobs is not None and self.inline_threshold is not None and size >= self.inline_threshold

    def _new_blob_key(self) -> str:
        return f"{self.namespace}/{uuid.uuid4().hex}"

    async def _drop_blobs(self, keys: Iterable[str | None]) -> None:
        if self.blobs is None:
            return
        with anyio.CancelScope(shield=True):
            for key in keys:
                if key is None:
                    continue
                try:
                    await self.blobs.delete(key)
                except Exception:
                    log.exception("could not delete blob %s (it is now unreferenced)", key)

    def _ensure_parents(self, directory: str, now: float, changes: _Changes) -> None:
        """Create `directory` and its missing ancestors (call inside a transaction)."""
        missing: _Strs = []
        current = directory
        while current not in ("", "/"):
            row = self.table.row(current)
            if row is not None:
                if row["type"] != "directory":
                    raise NotADirectory(f"ENOTDIR: {current} is not a directory", path=current)
                break
            missing.append(current)
            current = parent_of(current)
        for path in reversed(missing):
            self.table.insert_dir(path, now)
            changes.append(WorkspaceChange("create", path, "directory"))

    def _put_file(self, p: str, data: bytes, mime: str, blob_key: str | None, now: float,
                  changes: _Changes, total: int | None = None) -> tuple[str | None, int]:
        """Insert or replace the file row (inside a transaction).

        Returns the replaced blob key and the change in total bytes. `total` is the workspace's
        current size when the caller tracks it (batches), else it is queried.
        """
        old = self.table.row(p)
        if old is not None and old["type"] == "directory":
            raise IsADirectory(f"EISDIR: {p} is a directory", path=p)
        delta = len(data) - (old["size"] if old else 0)
        self._check_total(p, delta, total)
        self._ensure_parents(parent_of(p), now, changes)
        self.table.upsert_file(p, mime_type=mime, size=len(data), blob_key=blob_key,
                               content=None if blob_key is not None else data, now=now)
        changes.append(WorkspaceChange("update" if old else "create", p, "file"))
        return (old["blob_key"] if old else None), delta

    async def write_file(self, path: str, content: str | bytes, *, mime_type: str | None = None) -> None:
        """Create or replace a file; missing parent directories are created.

        `mime_type` defaults to one detected from the content and the name (text content stays
        `text/plain` unless the name says otherwise). Raises `QuotaExceeded`, `IsADirectory`,
        `NotADirectory` (a parent is a file) or `InvalidPath`.
        """
        self._check_ready()
        p = normalize_path(path)
        if p == "/":
            raise IsADirectory("EISDIR: cannot write to the root directory", path=p)
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        self._check_file_size(p, len(data))
        mime = mime_type or detect_media_type(name_of(p), data[:4096], text=isinstance(content, str))
        blob_key = self._new_blob_key() if self._spills(len(data)) else None
        if blob_key is not None:
            assert self.blobs is not None
            await self.blobs.put(blob_key, data)
        changes: _Changes = []
        try:
            with self.db.transaction():
                replaced, _ = self._put_file(p, data, mime, blob_key, time.time(), changes)
        except BaseException:
            await self._drop_blobs([blob_key])
            raise
        await self._drop_blobs([replaced])
        await self._emit(changes)

    async def append_file(self, path: str, content: str | bytes) -> None:
        """Add to the end of a file, creating it if needed."""
        extra = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        existing = await self.read_bytes(path)
        info = await self.stat(path) if existing is not None else None
        await self.write_file(path, (existing or b"") + extra, mime_type=info.mime_type if info else None)

    async def mkdir(self, path: str, *, recursive: bool = False) -> None:
        """Create a directory. `recursive` creates missing parents and accepts an existing directory."""
        self._check_ready()
        p = normalize_path(path)
        if p == "/":
            if recursive:
                return
            raise FileExists("EEXIST: the root directory always exists", path=p)
        changes: _Changes = []
        with self.db.transaction():
            row = self.table.row(p)
            if row is not None:
                if row["type"] == "directory" and recursive:
                    return
                kind = "directory" if row["type"] == "directory" else "file"
                raise FileExists(f"EEXIST: {p} already exists as a {kind}", path=p)
            now = time.time()
            parent = parent_of(p)
            if recursive:
                self._ensure_parents(parent, now, changes)
            elif parent != "/":
                parent_row = self.table.row(parent)
                if parent_row is None:
                    raise FileNotFound(f"ENOENT: parent directory not found: {parent}", path=parent)
                if parent_row["type"] != "directory":
                    raise NotADirectory(f"ENOTDIR: {parent} is not a directory", path=parent)
            self.table.insert_dir(p, now)
            changes.append(WorkspaceChange("create", p, "directory"))
        await self._emit(changes)

    def _delete_entry(self, row: Row, *, recursive: bool) -> _Strs:
        """Delete a row (and, for a directory, everything under it); returns blob keys to drop."""
        p = row["path"]
        keys: _Strs = [row["blob_key"]] if row["blob_key"] else []
        if row["type"] == "directory" and self.table.has_children(p):
            if not recursive:
                raise DirectoryNotEmpty(f"ENOTEMPTY: directory not empty: {p}", path=p)
            keys += self.table.blob_keys_under(p)
            self.table.delete_under(p)
        self.table.delete(p)
        return keys

    async def rm(self, path: str, *, recursive: bool = False, force: bool = False) -> None:
        """Delete a file or directory. `recursive` deletes a non-empty directory with everything in it;
        `force` makes a missing path a no-op. The root cannot be removed."""
        self._check_ready()
        p = normalize_path(path)
        if p == "/":
            raise WorkspaceError("EPERM: cannot remove the root directory", path=p)
        with self.db.transaction():
            row = self.table.row(p)
            if row is None:
                if force:
                    return
                raise FileNotFound(f"ENOENT: no such file or directory: {p}", path=p)
            keys = self._delete_entry(row, recursive=recursive)
        await self._drop_blobs(keys)
        await self._emit([WorkspaceChange("delete", p, row["type"])])

    async def mv(self, src: str, dst: str) -> None:
        """Move or rename a file or directory; missing parents of `dst` are created.

        An existing file at `dst` is replaced; an existing directory is not (`IsADirectory`).
        """
        self._check_ready()
        s, d = normalize_path(src), normalize_path(dst)
        if s == d:
            return
        if s == "/" or d == "/":
            raise WorkspaceError("EPERM: cannot move the root directory or replace it", path=s)
        changes: _Changes = []
        replaced: _Strs = []
        with self.db.transaction():
            row = self.table.row(s)
            if row is None:
                raise FileNotFound(f"ENOENT: no such file or directory: {s}", path=s)
            if row["type"] == "directory" and is_within(d, s):
                raise InvalidPath(f"EINVAL: cannot move {s} into itself", path=d)
            target = self.table.row(d)
            if target is not None:
                if target["type"] == "directory":
                    raise IsADirectory(f"EISDIR: cannot overwrite directory {d}", path=d)
                if row["type"] == "directory":
                    raise NotADirectory(f"ENOTDIR: cannot overwrite file {d} with a directory", path=d)
                replaced = self._delete_entry(target, recursive=False)
            now = time.time()
            self._ensure_parents(parent_of(d), now, changes)
            self.table.move(s, d, now, with_children=row["type"] == "directory")
            changes += [WorkspaceChange("delete", s, row["type"]), WorkspaceChange("create", d, row["type"])]
        await self._drop_blobs(replaced)
        await self._emit(changes)

    async def cp(self, src: str, dst: str, *, recursive: bool = False) -> None:
        """Copy a file, or with `recursive` a directory and everything under it, to `dst`."""
        self._check_ready()
        s, d = normalize_path(src), normalize_path(dst)
        source = await self.stat(s)
        if source is None:
            raise FileNotFound(f"ENOENT: no such file or directory: {s}", path=s)
        if source.type == "file":
            await self._copy_file(s, d)
            return
        if not recursive:
            raise IsADirectory(f"EISDIR: cannot copy directory {s} without recursive", path=s)
        if is_within(d, s):
            raise InvalidPath(f"EINVAL: cannot copy {s} into itself", path=d)
        await self.mkdir(d, recursive=True)
        for row in self.table.under(s):
            target = d + row["path"][len(s):] if s != "/" else d + row["path"]
            if row["type"] == "directory":
                await self.mkdir(target, recursive=True)
            else:
                await self._copy_file(row["path"], target)

    async def _copy_file(self, s: str, d: str) -> None:
        row = self.table.row(s)
        if row is None:
            raise FileNotFound(f"ENOENT: no such file or directory: {s}", path=s)
        if s != d:
            await self.write_file(d, await self._load(row), mime_type=row["mime_type"])

    # ---- batches (used by the bash sandbox to write back its changes) ----------------------------

    async def apply(self, *, writes: Mapping[str, bytes] | None = None, mkdirs: Iterable[str] = (),
                    deletes: Iterable[str] = ()) -> BatchResult:
        """Apply many changes in one transaction: deletions, then directories, then file writes.

        A change that cannot be made (a quota, a directory that still has entries, a file where a
        directory should be) is skipped and described in `errors`; the others still apply.
        Directories in `deletes` are removed only when nothing is left in them.
        """
        self._check_ready()
        writes = {normalize_path(p): bytes(v) for p, v in (writes or {}).items()}
        result = BatchResult()
        prepared: dict[str, tuple[bytes, str, str | None]] = {}
        for p, data in writes.items():
            try:
                if p == "/":
                    raise IsADirectory("EISDIR: cannot write to the root directory", path=p)
                self._check_file_size(p, len(data))
            except WorkspaceError as exc:
                result.errors.append(str(exc))
                continue
            prepared[p] = (data, detect_media_type(name_of(p), data[:4096], text=False),
                           self._new_blob_key() if self._spills(len(data)) else None)
        new_keys = [key for _, _, key in prepared.values() if key is not None]
        for data, _, key in prepared.values():
            if key is not None:
                assert self.blobs is not None
                await self.blobs.put(key, data)
        dropped: _Strs = []
        changes: _Changes = []
        try:
            with self.db.transaction():
                now = time.time()
                # Deepest first, so a directory's files are gone before the directory is tried.
                for p in sorted({normalize_path(x) for x in deletes}, key=lambda x: (-x.count("/"), x)):
                    row = None if p == "/" else self.table.row(p)
                    if row is None:
                        continue
                    try:
                        dropped += self._delete_entry(row, recursive=False)
                        changes.append(WorkspaceChange("delete", p, row["type"]))
                    except DirectoryNotEmpty:
                        result.errors.append(f"{p}: not deleted, it still holds files that were not mounted")
                for p in sorted({normalize_path(x) for x in mkdirs}):
                    if p == "/":
                        continue
                    try:
                        row = self.table.row(p)
                        if row is not None and row["type"] == "directory":
                            continue
                        if row is not None:
                            raise FileExists(f"EEXIST: {p} already exists as a file", path=p)
                        self._ensure_parents(p, now, changes)
                    except WorkspaceError as exc:
                        result.errors.append(str(exc))
                total = self.table.total_bytes()
                for p, (data, mime, key) in prepared.items():
                    try:
                        replaced, delta = self._put_file(p, data, mime, key, now, changes, total)
                        total += delta
                    except WorkspaceError as exc:
                        result.errors.append(str(exc))
                        if key is not None:
                            dropped.append(key)
                        continue
                    if replaced is not None:
                        dropped.append(replaced)
        except BaseException:
            await self._drop_blobs(new_keys)
            raise
        await self._drop_blobs(dropped)
        result.changes = changes
        await self._emit(changes)
        return result

    async def export(self, *, max_files: int, max_file_bytes: int,
                     exclude_roots: Sequence[str] = ()) -> tuple[_FileList, _Contents, _FileList]:
        """A snapshot for the bash sandbox: `(directories, [(file, content)], skipped files)`.

        At most `max_files` files of at most `max_file_bytes` each, in path order; the others are
        `skipped`. Entries under a top-level name in `exclude_roots` are left out entirely.
        """
        self._check_ready()
        excluded = tuple(f"/{name}" for name in exclude_roots)
        rows = self.table.with_small_contents(max_file_bytes)
        directories: _FileList = []
        files: _Contents = []
        skipped: _FileList = []
        for row in rows:
            p = row["path"]
            if any(p == root or p.startswith(root + "/") for root in excluded):
                continue
            info = self._info(row)
            if info.type == "directory":
                directories.append(info)
            elif info.size > max_file_bytes or len(files) >= max_files:
                skipped.append(info)
            else:
                data = bytes(row["content"] or b"") if row["blob_key"] is None else await self._load(row)
                files.append((info, data))
        return directories, files, skipped


__all__ = ["MIGRATIONS", "BatchResult", "ChangeListener", "Workspace", "WorkspaceChange"]
