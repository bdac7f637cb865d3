"""`ShippedDatabase`: an agent's SQLite database whose every commit is copied to PostgreSQL.

The agent keeps its own SQLite database, so every feature above the runtime (the transcript and
its FTS5 search, state, schedules, submissions, fibers, the workspace, `self.sql()`) behaves as in
the embedded runtime. What changes is where the database lives between uses: in Postgres, as an
image (the whole file at its last checkpoint) plus the WAL frames committed since.

* The cache file is never fsynced (`synchronous=OFF`): a process that dies loses it, and the
  next process starts from Postgres anyway.
* Automatic checkpoints are off, so the WAL only grows while the agent is open here, and frames
  of committed transactions are never rewritten.
* After each statement or transaction that leaves no transaction open, the WAL's new committed
  frames (up to the last commit frame; a rolled-back transaction's leftovers are not committed
  and may be overwritten) are appended to `think_agent_wal` before the call returns. A turn that
  has moved on from a step has that step in Postgres.
* Closing ships what is left, checkpoints, and replaces image and WAL rows by the new image in one
  transaction; then the agent's lock is released. While the process shuts down (`draining`) only
  what is left is shipped: image and WAL rows stay, and the runtime marks all its agents closed in
  one statement before its session (and every lock with it) ends, so a drain costs no round trip
  per agent whatever the size of their databases.

Another process that opens the agent writes the image and the WAL bytes to its own cache file:
SQLite replays the WAL up to its last commit frame, which is exactly the state the last process
had committed, however it died.
"""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path
from typing import Any

from think.cluster.store import ClusterStore
from think.errors import StorageError
from think.storage import Database, Row
from think.storage.template import remove_database

log = logging.getLogger("think.cluster")
WAL_HEADER = 32
FRAME_HEADER = 24


def committed_end(chunk: bytes, offset: int, salts: bytes, page_size: int) -> int:
    """How many bytes of `chunk` (the WAL from `offset` on, `offset` past the header and on a
    frame boundary) end with a commit frame: the part that may be shipped."""
    frame = FRAME_HEADER + page_size
    end = at = 0
    while at + frame <= len(chunk):
        (commit,) = struct.unpack_from(">I", chunk, at + 4)
        if chunk[at + 8:at + 16] != salts:
            break  # stale bytes past the end of this WAL's frames
        at += frame
        if commit:
            end = at
    return end


class ShippedDatabase(Database):
    """A `Database` that copies each commit to the cluster store (see the module docstring)."""

    def __init__(self, path: str | Path, *, store: ClusterStore, key: str, shipped: int) -> None:
        super().__init__(path, synchronous="OFF")  # a cache file: Postgres has every commit
        self._conn.execute("PRAGMA wal_autocheckpoint=0")
        self._store = store
        self._key = key
        self._wal = f"{self.path}-wal"
        self._shipped = shipped
        self._page_size = int(self._conn.execute("PRAGMA page_size").fetchone()[0])
        self._salts: bytes | None = None
        if shipped >= WAL_HEADER:
            with open(self._wal, "rb") as wal:
                self._salts = wal.read(WAL_HEADER)[16:24]

    def ship(self) -> None:
        """Copy the WAL's newly committed frames to Postgres (a no-op inside a transaction)."""
        if self._conn.in_transaction or self._closed:
            return
        try:
            size = os.stat(self._wal).st_size
        except FileNotFoundError:
            return
        if size <= max(self._shipped, WAL_HEADER):
            return
        with open(self._wal, "rb") as wal:
            head = b""
            if self._salts is None:
                head = wal.read(WAL_HEADER)
                self._salts = head[16:24]
            start = max(self._shipped, WAL_HEADER)
            wal.seek(start)
            chunk = wal.read(size - start)
        end = committed_end(chunk, start, self._salts, self._page_size)
        if end:
            self._store.append_wal(self._key, (head if self._shipped < WAL_HEADER else b"") + chunk[:end])
            self._shipped = start + end

    def sql(self, query: str, *params: Any) -> list[Row]:
        try:
            return super().sql(query, *params)
        finally:
            self.ship()

    def value(self, query: str, *params: Any) -> Any:
        try:
            return super().value(query, *params)
        finally:
            self.ship()

    def execute_many(self, query: str, rows: Any) -> None:
        try:
            super().execute_many(query, rows)
        finally:
            self.ship()

    def transaction(self) -> Any:
        return _Shipping(self, super().transaction())

    def close(self) -> None:
        """Ship, checkpoint, store the new image and release the agent. If the cluster database
        is out of reach, what it already has (image and WAL to the last shipped commit) stands."""
        if self._closed:
            return
        try:
            if self._store.healthy:
                self.ship()
                if not self._store.draining:  # (a drain lets every agent go at once, `let_go_all`)
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    super().close()
                    self._store.checkpoint(self._key, Path(self.path).read_bytes())
        except StorageError as exc:
            log.warning("closing %s: %s (Postgres keeps its last shipped commit)", self._key, exc)
        finally:
            super().close()
            if not self._store.draining:  # (a drain removes the whole cache directory at the end)
                remove_database(self.path)
                self._store.release(self._key)


class _Shipping:
    """`Database.transaction()`, shipping the commit when the outermost block ends."""

    def __init__(self, db: ShippedDatabase, inner: Any) -> None:
        self._db = db
        self._inner = inner

    def __enter__(self) -> Database:
        result: Database = self._inner.__enter__()
        return result

    def __exit__(self, *exc: Any) -> Any:
        try:
            return self._inner.__exit__(*exc)
        finally:
            self._db.ship()
