"""The usage ledger's table (its own module, so `import think` does not load the rest of `think.usage`)."""

from __future__ import annotations

import sqlite3

from think.storage.migrations import migration, rebuild_table


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


@migration("think.usage.002_plain_seq")
def _m002(conn: sqlite3.Connection) -> None:
    # `seq` without AUTOINCREMENT: rows are never deleted, so the next rowid is the same number,
    # and each step's row no longer rewrites the sqlite_sequence page (one page less a step).
    rebuild_table(conn, "think_usage", lambda sql: sql.replace("INTEGER PRIMARY KEY AUTOINCREMENT",
                                                                "INTEGER PRIMARY KEY", 1))
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'think_usage'")


MIGRATIONS = [_m001, _m002]
