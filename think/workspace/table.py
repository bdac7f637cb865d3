"""`FileTable`: the SQL behind a workspace — one namespace's rows of `think_workspace`.

Plain synchronous statements on the agent's connection; `Workspace` wraps them in short
transactions and adds the filesystem rules (parents, quotas, blobs, events). Paths given here are
already normalized; the root directory has no row.
"""

from __future__ import annotations

import sqlite3

from think.storage import Database, Row, migration
from think.workspace.paths import descendants_range, name_of, parent_of

_COLUMNS = "path, name, type, mime_type, size, blob_key, created_at, modified_at"


@migration("think.workspace.001_files")
def _m001_files(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_workspace (
            id          INTEGER PRIMARY KEY,
            namespace   TEXT NOT NULL,
            path        TEXT NOT NULL,          -- absolute and normalized; the root has no row
            parent_path TEXT NOT NULL,
            name        TEXT NOT NULL,
            type        TEXT NOT NULL CHECK (type IN ('file', 'directory')),
            mime_type   TEXT NOT NULL DEFAULT 'text/plain',
            size        INTEGER NOT NULL DEFAULT 0,
            blob_key    TEXT,                   -- NULL: the content is inline; else its blob store key
            created_at  REAL NOT NULL,
            modified_at REAL NOT NULL,
            content     BLOB,                   -- last, so metadata reads never load it
            UNIQUE (namespace, path)
        )""")
    conn.execute("CREATE INDEX think_workspace_parent ON think_workspace (namespace, parent_path, type, name)")


MIGRATIONS = [_m001_files]


class FileTable:
    """The rows of one workspace namespace. Rows are dicts with the columns of `_COLUMNS`."""

    def __init__(self, db: Database, namespace: str) -> None:
        self.db = db
        self.namespace = namespace

    # ---- reading ---------------------------------------------------------------------------------

    def row(self, path: str) -> Row | None:
        return self.db.one(f"SELECT {_COLUMNS} FROM think_workspace WHERE namespace = ? AND path = ?",
                           self.namespace, path)

    def content(self, path: str) -> bytes:
        """The inline content of a file row."""
        data = self.db.value("SELECT content FROM think_workspace WHERE namespace = ? AND path = ?",
                             self.namespace, path)
        return bytes(data or b"")

    def children(self, directory: str, *, limit: int, offset: int) -> list[Row]:
        """Entries of a directory: directories first (`'directory' < 'file'`), then by name."""
        return self.db.sql(f"SELECT {_COLUMNS} FROM think_workspace WHERE namespace = ? AND parent_path = ? "
                           "ORDER BY type, name LIMIT ? OFFSET ?", self.namespace, directory, limit, offset)

    def under(self, directory: str) -> list[Row]:
        """Every row strictly below `directory`, in path order (one index range scan)."""
        low, high = descendants_range(directory)
        return self.db.sql(f"SELECT {_COLUMNS} FROM think_workspace WHERE namespace = ? AND path >= ? "
                           "AND path < ? ORDER BY path", self.namespace, low, high)

    def has_children(self, directory: str) -> bool:
        low, high = descendants_range(directory)
        return self.db.value("SELECT 1 FROM think_workspace WHERE namespace = ? AND path >= ? AND path < ? "
                             "LIMIT 1", self.namespace, low, high) is not None

    def blob_keys_under(self, directory: str) -> list[str]:
        low, high = descendants_range(directory)
        return [r["blob_key"] for r in self.db.sql(
            "SELECT blob_key FROM think_workspace WHERE namespace = ? AND path >= ? AND path < ? "
            "AND blob_key IS NOT NULL", self.namespace, low, high)]

    def total_bytes(self) -> int:
        return int(self.db.value("SELECT COALESCE(SUM(size), 0) FROM think_workspace WHERE namespace = ?",
                                 self.namespace))

    def summary(self) -> Row:
        row = self.db.one(
            "SELECT COUNT(*) FILTER (WHERE type = 'file') AS files, "
            "COUNT(*) FILTER (WHERE type = 'directory') AS directories, "
            "COALESCE(SUM(size), 0) AS total_bytes, COUNT(blob_key) AS blob_files "
            "FROM think_workspace WHERE namespace = ?", self.namespace)
        assert row is not None
        return row

    def with_small_contents(self, max_bytes: int) -> list[Row]:
        """Every row in path order; `content` filled for inline files of at most `max_bytes`."""
        return self.db.sql(f"SELECT {_COLUMNS}, CASE WHEN blob_key IS NULL AND size <= ? THEN content END "
                           "AS content FROM think_workspace WHERE namespace = ? ORDER BY path",
                           max_bytes, self.namespace)

    # ---- writing ---------------------------------------------------------------------------------

    def insert_dir(self, path: str, now: float) -> None:
        self.db.sql("INSERT INTO think_workspace (namespace, path, parent_path, name, type, mime_type, size, "
                    "created_at, modified_at) VALUES (?, ?, ?, ?, 'directory', 'inode/directory', 0, ?, ?)",
                    self.namespace, path, parent_of(path), name_of(path), now, now)

    def upsert_file(self, path: str, *, mime_type: str, size: int, blob_key: str | None, content: bytes | None,
                    now: float) -> None:
        self.db.sql(
            "INSERT INTO think_workspace (namespace, path, parent_path, name, type, mime_type, size, blob_key, "
            "created_at, modified_at, content) VALUES (?, ?, ?, ?, 'file', ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (namespace, path) DO UPDATE SET mime_type = excluded.mime_type, size = excluded.size, "
            "blob_key = excluded.blob_key, modified_at = excluded.modified_at, content = excluded.content",
            self.namespace, path, parent_of(path), name_of(path), mime_type, size, blob_key, now, now, content)

    def delete(self, path: str) -> None:
        self.db.sql("DELETE FROM think_workspace WHERE namespace = ? AND path = ?", self.namespace, path)

    def delete_under(self, directory: str) -> None:
        low, high = descendants_range(directory)
        self.db.sql("DELETE FROM think_workspace WHERE namespace = ? AND path >= ? AND path < ?",
                    self.namespace, low, high)

    def move(self, src: str, dst: str, now: float, *, with_children: bool) -> None:
        """Rename a row, and with `with_children` everything below it (dst must be free)."""
        self.db.sql("UPDATE think_workspace SET path = ?, parent_path = ?, name = ?, modified_at = ? "
                    "WHERE namespace = ? AND path = ?", dst, parent_of(dst), name_of(dst), now, self.namespace, src)
        if with_children:
            low, high = descendants_range(src)
            cut = len(src) + 1
            self.db.sql(
                "UPDATE think_workspace SET path = ? || substr(path, ?), "
                "parent_path = CASE WHEN parent_path = ? THEN ? ELSE ? || substr(parent_path, ?) END "
                "WHERE namespace = ? AND path >= ? AND path < ?",
                dst, cut, src, dst, dst, cut, self.namespace, low, high)
