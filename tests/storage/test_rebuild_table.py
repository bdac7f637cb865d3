"""`rebuild_table`: a table rebuilt from its stored definition keeps its rows and indexes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from think.errors import StorageError
from think.storage import Database, migrate, migration, rebuild_table


@migration("t.001")
def _create(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE notes (key TEXT PRIMARY KEY, body TEXT NOT NULL, at REAL)")
    conn.execute("CREATE INDEX notes_at ON notes (at)")
    conn.execute("INSERT INTO notes VALUES ('a', 'first', 1.0), ('b', 'second', 2.0)")


@migration("t.002")
def _keyed(conn: sqlite3.Connection) -> None:
    rebuild_table(conn, "notes", lambda sql: f"{sql} WITHOUT ROWID")


def test_a_rebuilt_table_keeps_its_rows_and_indexes_under_the_new_definition(tmp_path: Path) -> None:
    db = Database(tmp_path / "t.db")
    migrate(db, [_create, _keyed])
    assert db.value("SELECT sql FROM sqlite_master WHERE name = 'notes'").endswith("WITHOUT ROWID")
    assert [(r["key"], r["body"], r["at"]) for r in db.sql("SELECT * FROM notes ORDER BY key")] == [
        ("a", "first", 1.0), ("b", "second", 2.0)]
    assert db.value("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'notes_at'") == 1
    assert db.value("SELECT count(*) FROM sqlite_master WHERE name LIKE '%rebuilt%'") == 0
    db.close()


def test_a_rebuild_that_changes_nothing_or_names_another_table_is_refused(tmp_path: Path) -> None:
    db = Database(tmp_path / "t.db")
    migrate(db, [_create])
    with pytest.raises(StorageError, match="would not change it"):
        rebuild_table(db.connection, "notes", lambda sql: sql)
    with pytest.raises(StorageError, match="must start with CREATE TABLE notes"):
        rebuild_table(db.connection, "notes", lambda sql: sql.replace("notes", "other", 1))
    with pytest.raises(StorageError, match="no table 'missing'"):
        rebuild_table(db.connection, "missing", lambda sql: sql)
    assert db.value("SELECT count(*) FROM notes") == 2  # nothing was touched
    db.close()
