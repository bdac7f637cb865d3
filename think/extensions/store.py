"""Extensions loaded at run time, as rows of the agent's SQLite database (`think_extensions`).

A row is written in one statement once the extension has been checked and built, so a process
killed during a load leaves either no row (nothing is restored) or the whole row (the extension
is restored at the next start). Static extensions (`get_extensions()`) are never stored: they
come from the code on every start.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

import orjson

from think.storage import Database, migration


@migration("think.extensions.001_extensions")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_extensions (
            name       TEXT PRIMARY KEY,
            manifest   BLOB NOT NULL,      -- JSON: the checked ExtensionManifest
            source     TEXT NOT NULL,
            loaded_at  REAL NOT NULL
        )""")


MIGRATIONS = [_m001]


@dataclass(frozen=True)
class StoredExtension:
    name: str
    manifest: dict[str, object]
    source: str


class ExtensionStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def all(self) -> list[StoredExtension]:
        rows = self.db.sql("SELECT name, manifest, source FROM think_extensions ORDER BY loaded_at, name")
        return [StoredExtension(r["name"], orjson.loads(r["manifest"]), r["source"]) for r in rows]

    def save(self, name: str, manifest: dict[str, object], source: str) -> None:
        self.db.sql("INSERT INTO think_extensions (name, manifest, source, loaded_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET manifest = excluded.manifest, source = excluded.source",
                    name, orjson.dumps(manifest), source, time.time())

    def remove(self, name: str) -> None:
        self.db.sql("DELETE FROM think_extensions WHERE name = ?", name)
