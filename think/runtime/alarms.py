"""`AlarmIndex`: when each agent of a data directory next needs to wake, in one small SQLite file.

An agent's schedules live in its own database; the index lets the runtime find the next due agent
without opening every file, and survives restarts with them. Each row also names where the
agent's class is defined (`module:qualname`), so a restarted process can wake agents of classes it
does not serve itself (sub-agents, agents only other code opens).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Protocol

from think.storage import Database, migrate, migration


@migration("think.runtime.001_alarms")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE alarms (agent_class TEXT NOT NULL, name TEXT NOT NULL, due REAL NOT NULL, "
                 "PRIMARY KEY (agent_class, name))")
    conn.execute("CREATE INDEX alarms_due ON alarms (due)")


@migration("think.runtime.002_alarm_class_paths")
def _m002(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE alarms ADD COLUMN class_path TEXT")


class Alarms(Protocol):
    """What the runtime's alarm loop needs of an index (the cluster runtime keeps it in Postgres)."""

    def set(self, agent_class: str, name: str, due: float | None, class_path: str | None = None) -> None: ...
    def due(self, now: float) -> list[tuple[str, str, str | None]]: ...
    def earliest(self) -> float | None: ...
    def close(self) -> None: ...


class AlarmIndex:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = Database(path)
        migrate(self.db, [_m001, _m002])

    def set(self, agent_class: str, name: str, due: float | None, class_path: str | None = None) -> None:
        if due is None:
            self.db.sql("DELETE FROM alarms WHERE agent_class = ? AND name = ?", agent_class, name)
        else:
            self.db.sql("INSERT INTO alarms (agent_class, name, due, class_path) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT(agent_class, name) DO UPDATE SET due = excluded.due, "
                        "class_path = coalesce(excluded.class_path, alarms.class_path)",
                        agent_class, name, due, class_path)

    def due(self, now: float) -> list[tuple[str, str, str | None]]:
        """`(kebab class name, agent name, class path)` of every due alarm, the earliest first."""
        rows = self.db.sql("SELECT agent_class, name, class_path FROM alarms WHERE due <= ? ORDER BY due", now)
        return [(r["agent_class"], r["name"], r["class_path"]) for r in rows]

    def earliest(self) -> float | None:
        value = self.db.value("SELECT min(due) FROM alarms")
        return float(value) if value is not None else None

    def close(self) -> None:
        self.db.close()
