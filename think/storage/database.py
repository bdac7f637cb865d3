"""`Database`: one SQLite connection per agent, used inline on the event loop.

SQLite calls take tens of microseconds while a thread hop costs ~170 µs on the machines we
measured, so statements run on the loop. Keep transactions short and never hold one across an
`await`: `transaction()` is a plain (synchronous) context manager for exactly that reason.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from think.errors import StorageError

Row = dict[str, Any]


class Database:
    """An open SQLite database in WAL mode (`synchronous=NORMAL` unless told otherwise)."""

    def __init__(self, path: str | Path, *, synchronous: Literal["NORMAL", "FULL", "OFF"] = "NORMAL") -> None:
        self.path = str(path)
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                         cached_statements=256)
            self._conn.row_factory = sqlite3.Row
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={synchronous}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA busy_timeout=5000")
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the database at {self.path}: {exc}") from exc
        self._depth = 0
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def sql(self, query: str, *params: Any) -> list[Row]:
        """Run one statement; the rows it returns as dicts (empty for writes)."""
        try:
            cursor = self._conn.execute(query, params)
            return [dict(row) for row in cursor.fetchall()] if cursor.description else []
        except sqlite3.Error as exc:
            raise StorageError(f"{exc} (in: {query.strip()[:200]})") from exc

    def rows(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run one query; its rows as plain tuples (no dict a row: for reads of thousands)."""
        cursor = self._conn.cursor()
        cursor.row_factory = None
        try:
            return cursor.execute(query, params).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"{exc} (in: {query.strip()[:200]})") from exc

    def one(self, query: str, *params: Any) -> Row | None:
        rows = self.sql(query, *params)
        return rows[0] if rows else None

    def value(self, query: str, *params: Any) -> Any:
        """The first column of the first row, or None."""
        try:
            row = self._conn.execute(query, params).fetchone()
        except sqlite3.Error as exc:
            raise StorageError(f"{exc} (in: {query.strip()[:200]})") from exc
        return None if row is None else row[0]

    def execute_many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        try:
            self._conn.executemany(query, rows)
        except sqlite3.Error as exc:
            raise StorageError(f"{exc} (in: {query.strip()[:200]})") from exc

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on error; nested calls join the outer one."""
        if self._depth:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        self._conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield self
        except BaseException:
            self._depth = 0
            self._conn.execute("ROLLBACK")
            raise
        self._depth = 0
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._conn.execute("ROLLBACK")
            raise StorageError(f"commit failed: {exc}") from exc

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw connection, for migrations and advanced use."""
        return self._conn

    def close(self) -> None:
        if not self._closed:
            self._conn.close()
            self._closed = True
