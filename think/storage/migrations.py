"""Ordered, named schema migrations.

Each concept owns its tables and registers migrations under a namespace; a migration runs once
per database, in the order written, and all the ones a database has not seen run in one
transaction. Agents add their own with the `migrations` class attribute.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from think.errors import StorageError
from think.storage.database import Database

MigrationFn = Callable[[sqlite3.Connection], None]


@dataclass(frozen=True)
class Migration:
    name: str
    apply: MigrationFn


def migration(name: str) -> Callable[[MigrationFn], Migration]:
    """Decorate a function `(connection) -> None` as a named migration."""

    def wrap(fn: MigrationFn) -> Migration:
        return Migration(name, fn)

    return wrap


def migrate(db: Database, migrations: Sequence[Migration]) -> list[str]:
    """Apply the migrations this database has not seen, in order. Returns the names applied."""
    conn = db.connection
    conn.execute("CREATE TABLE IF NOT EXISTS _think_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    done = {row[0] for row in conn.execute("SELECT name FROM _think_migrations")}
    applied: list[str] = []
    names = [m.name for m in migrations]
    if len(set(names)) != len(names):
        raise StorageError(f"two migrations share a name: {sorted(n for n in names if names.count(n) > 1)}")
    pending = [m for m in migrations if m.name not in done]
    if not pending:
        return applied
    # One transaction for all of them: a new database pays one commit, and a failure leaves the
    # schema as it was (the error names the migration that failed).
    with db.transaction():
        for m in pending:
            try:
                m.apply(conn)
            except sqlite3.Error as exc:
                raise StorageError(f"migration {m.name!r} failed: {exc}") from exc
            conn.execute("INSERT INTO _think_migrations (name, applied_at) VALUES (?, ?)", (m.name, time.time()))
            applied.append(m.name)
    return applied


def rebuild_table(conn: sqlite3.Connection, table: str, change: Callable[[str], str]) -> None:
    """Rebuild `table` with the definition `change` makes of its stored `CREATE TABLE` text,
    keeping its rows and indexes (SQLite cannot alter a table's key or its rowid in place).

    Derived from the stored text, the columns are written in one place (the migration that made
    the table, plus any columns added since). For use inside a migration: `migrate` runs it in
    its transaction, so a failure or a kill leaves the old table as it was.
    """
    created = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    if created is None:
        raise StorageError(f"no table {table!r} to rebuild")
    definition = change(created[0])
    if definition == created[0]:
        raise StorageError(f"rebuilding {table!r} would not change it")
    staged = f"{table}_rebuilt"
    head = re.compile(rf"^CREATE TABLE\s+(\"?){re.escape(table)}\1", re.IGNORECASE)
    if not head.match(definition):
        raise StorageError(f"the new definition of {table!r} must start with CREATE TABLE {table}")
    indexes = [row[0] for row in conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL", (table,))]
    conn.execute(head.sub(f"CREATE TABLE {staged}", definition, count=1))
    columns = ", ".join(row[1] for row in conn.execute(f"PRAGMA table_info({staged})"))
    conn.execute(f"INSERT INTO {staged} ({columns}) SELECT {columns} FROM {table}")
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE {staged} RENAME TO {table}")
    for index in indexes:
        conn.execute(index)
