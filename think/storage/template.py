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
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from think.storage.database import Database
from think.storage.migrations import Migration, migrate

_WAL_FORMAT = 2  # file-format bytes 18 and 19 of the header: 1 legacy (rollback journal), 2 WAL
_images: dict[tuple[Migration, ...], bytes] = {}


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


def create_from_image(path: str | Path, image: bytes) -> bool:
    """Create the database file at `path` as a copy of `image`, unless a file is there already.

    True if this call created it; False if a file existed or the file system cannot hard-link
    (then nothing was written and the caller creates the database the ordinary way).
    """
    target = Path(path)
    if target.exists():
        return False
    staging = target.with_name(f"{target.name}.{os.getpid()}.new")
    try:
        fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(image)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.link(staging, target)
    except OSError:  # FileExistsError included: a database appeared there meanwhile
        return False
    finally:
        staging.unlink(missing_ok=True)
    return True


def remove_database(path: str | Path) -> None:
    """Delete a database file with its WAL and shared-memory files."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


__all__ = ["create_from_image", "remove_database", "schema_image"]
