"""Run as `python -m tests.storage.rebuild_kill DB`: migrates the database at DB with every
migration of `Think` and then one that SIGKILLs the process, inside the same transaction, after
the table rebuilds have run but before anything is committed."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys

from think import Think
from think.storage import Database, migrate, migration


@migration("tests.kill_mid_migration")
def _kill(conn: sqlite3.Connection) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    migrate(Database(sys.argv[1]), [*Think.all_migrations(), _kill])
