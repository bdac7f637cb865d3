"""New databases start from a schema image instead of replaying every migration.

A brand-new agent used to create its file, switch it to WAL (a rollback-journal transaction
with four fsyncs) and run each framework migration: ~4 ms of CPU before its first turn. Now the
framework's migrations run once per process into an in-memory database; its bytes, with the
header marked WAL, are the image every new file of that schema starts as. The image carries the
`_think_migrations` rows, so opening the file and calling `migrate()` finds nothing pending and
the migration history keeps working for databases created before (or without) the image.

Only the framework's migrations go into the image: they are plain DDL. An agent's own
`migrations` may do anything (insert a row with a fresh id, read the clock), so they still run
on each new database, after the image, through `migrate()`.

The file appears atomically: the image is written under a temporary name and hard-linked to the
database's name, which fails if a file already exists there, so an existing database is never
replaced. A process killed mid-way leaves at most the temporary file (removed on the next try),
never a partial database. Where hard links are not possible the caller falls back to creating
the database with `migrate()`.

Next to the file goes a write-ahead log of one committed frame (`schema_wal`: page 1 as the image
has it). SQLite writes a fresh log's header on the first commit and syncs the log and its
directory (two `fdatasync`s, milliseconds on a busy disk); a log that already holds a frame is
appended to like any other, so a new agent's first turn costs what a later one does. The frame
changes nothing: without the log (a kill before it was put in place) the file is the same
database.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from think.storage.database import Database
from think.storage.migrations import Migration, migrate

_WAL_FORMAT = 2  # file-format bytes 18 and 19 of the header: 1 legacy (rollback journal), 2 WAL
_images: dict[tuple[Migration, ...], bytes] = {}
_wals: dict[tuple[Migration, ...], bytes] = {}


def schema_image(migrations: Sequence[Migration]) -> bytes:
    """The bytes of a WAL-mode database with these migrations applied (built once per process)."""
    key = tuple(migrations)
    image = _images.get(key)
    if image is None:
        scratch = Database(":memory:")
        try:
            migrate(scratch, key)
            raw = bytearray(scratch.connection.serialize())
        finally:
            scratch.close()
        raw[18] = raw[19] = _WAL_FORMAT
        image = _images[key] = bytes(raw)
    return image


def schema_wal(migrations: Sequence[Migration]) -> bytes:
    """A write-ahead log for `schema_image(migrations)` holding one committed frame that changes
    nothing (built once per process, in a temporary directory)."""
    key = tuple(migrations)
    wal = _wals.get(key)
    if wal is None:
        with tempfile.TemporaryDirectory(prefix="think-image-") as scratch:
            path = Path(scratch) / "image.db"
            path.write_bytes(schema_image(key))
            db = Database(path)
            try:
                with db.transaction():  # page 1 rewritten as it was: one frame, nothing changed
                    version = db.value("PRAGMA user_version")
                    db.sql(f"PRAGMA user_version = {int(version) + 1}")
                    db.sql(f"PRAGMA user_version = {int(version)}")
                wal = Path(f"{path}-wal").read_bytes()
            finally:
                db.close()
        _wals[key] = wal
    return wal


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def create_from_image(path: str | Path, image: bytes, wal: bytes = b"") -> bool:
    """Create the database file at `path` as a copy of `image` (with `wal` as its write-ahead
    log, if given), unless a file is there already.

    True if this call created it; False if a file existed or the file system cannot hard-link
    (then nothing was written and the caller creates the database the ordinary way).
    """
    target = Path(path)
    if target.exists():
        return False
    staging = target.with_name(f"{target.name}.{os.getpid()}.new")
    try:
        _write(staging, image)
        os.link(staging, target)
    except OSError:  # FileExistsError included: a database appeared there meanwhile
        return False
    finally:
        staging.unlink(missing_ok=True)
    if wal:
        # After the link, so an existing database's log is never touched; it replaces whatever
        # log a deleted database may have left under this name. Written in place: a log cut
        # short by a kill fails SQLite's frame checksums and is read as empty, and the database
        # is complete without it.
        try:
            _write(target.with_name(f"{target.name}-wal"), wal)
        except OSError:
            pass
    return True


def remove_database(path: str | Path) -> None:
    """Delete a database file with its WAL and shared-memory files."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


__all__ = ["create_from_image", "remove_database", "schema_image", "schema_wal"]
