"""The usage ledger's table (its own module, so `import think` does not load the rest of `think.usage`)."""

from __future__ import annotations

import sqlite3

from think.storage.migrations import migration


@migration("think.usage.001_ledger")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_usage (
            seq         INTEGER PRIMARY KEY AUTOINCREMENT,
            at          REAL NOT NULL,
            request_id  TEXT NOT NULL,
            session_id  TEXT NOT NULL,
            message_id  TEXT NOT NULL,
            step        INTEGER NOT NULL,
            model       TEXT NOT NULL,
            input       INTEGER,
            output      INTEGER,
            reasoning   INTEGER,
            cached      INTEGER
        )""")
    conn.execute("CREATE INDEX think_usage_at ON think_usage (at)")


MIGRATIONS = [_m001]
