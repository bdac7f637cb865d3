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


@migration("think.usage.002_plain_seq")
def _m002(conn: sqlite3.Connection) -> None:
    # `seq` without AUTOINCREMENT: rows are never deleted, so the next rowid is the same number,
    # and each step's row no longer rewrites the sqlite_sequence page (one page less a step).
    conn.execute("""
        CREATE TABLE think_usage_v2 (
            seq         INTEGER PRIMARY KEY,
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
    conn.execute("INSERT INTO think_usage_v2 SELECT seq, at, request_id, session_id, message_id, step, model, input, "
                 "output, reasoning, cached FROM think_usage ORDER BY seq")
    conn.execute("DROP TABLE think_usage")
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'think_usage'")
    conn.execute("ALTER TABLE think_usage_v2 RENAME TO think_usage")
    conn.execute("CREATE INDEX think_usage_at ON think_usage (at)")


MIGRATIONS = [_m001, _m002]
