"""Durable schedules of one agent: rows in its own SQLite, fired by the runtime's alarms.

One-shot schedules always run, late if the process was down at their time. Recurring schedules do
not backfill: a run missed by more than `MISSED_GRACE` seconds is skipped (unless the schedule was
created with `backfill=True`, which runs it once), and the next run is the next future occurrence.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import orjson

from think.errors import ConfigurationError
from think.scheduling.cron import Schedule, parse_schedule
from think.storage import Database, migration

log = logging.getLogger("think.scheduling")
MISSED_GRACE = 60.0
When = float | int | timedelta | datetime | str
_FIRING: contextvars.ContextVar[ScheduledTask | None] = contextvars.ContextVar("think_schedule_firing", default=None)


@migration("think.scheduling.001_schedules")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_schedules (
            id         TEXT PRIMARY KEY,
            method     TEXT NOT NULL,
            payload    BLOB,                 -- JSON
            kind       TEXT NOT NULL,        -- 'once' | 'recurring'
            spec       TEXT,                 -- the schedule text of a recurring task
            timezone   TEXT,
            next_run   REAL NOT NULL,        -- Unix time
            backfill   INTEGER NOT NULL DEFAULT 0,
            runs       INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            created_at REAL NOT NULL
        )""")
    conn.execute("CREATE INDEX think_schedules_next ON think_schedules (next_run)")


MIGRATIONS = [_m001]


@dataclass(frozen=True, kw_only=True)
class ScheduledTask:
    id: str
    method: str
    payload: Any
    kind: Literal["once", "recurring"]
    spec: str | None
    timezone: str | None
    next_run: float
    runs: int = 0
    last_error: str | None = None


def firing() -> ScheduledTask | None:
    """The schedule whose method is running now, as it was before this run: its `next_run` is
    the occurrence being run (None outside a scheduled call)."""
    return _FIRING.get()


def _row_to_task(row: dict[str, Any]) -> ScheduledTask:
    return ScheduledTask(id=row["id"], method=row["method"],
                         payload=orjson.loads(row["payload"]) if row["payload"] is not None else None,
                         kind=row["kind"], spec=row["spec"], timezone=row["timezone"], next_run=row["next_run"],
                         runs=row["runs"], last_error=row["last_error"])


class Schedules:
    """The schedule table of one agent."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.clock = clock

    def add(self, when: When, method: str, payload: Any = None, *, id: str | None = None,
            timezone: str | None = None, backfill: bool = False) -> ScheduledTask:
        """Store a schedule. `when` is a delay in seconds or a timedelta, a datetime, or a
        recurring schedule string (cron or `every …`). An existing `id` is replaced."""
        now = self.clock()
        spec: str | None = None
        schedule: Schedule | None = None
        if isinstance(when, bool):
            raise ConfigurationError("schedule(when=...) takes seconds, a timedelta, a datetime or a schedule string")
        if isinstance(when, int | float):
            if when < 0:
                raise ConfigurationError(f"a delay cannot be negative ({when})")
            next_run = now + float(when)
        elif isinstance(when, timedelta):
            next_run = now + when.total_seconds()
        elif isinstance(when, datetime):
            if when.tzinfo is None:
                raise ConfigurationError("schedule(datetime) needs a timezone-aware datetime")
            next_run = when.timestamp()
        elif isinstance(when, str):
            schedule = parse_schedule(when, timezone=timezone)
            spec = when
            next_run = schedule.next_after(now)
        else:
            raise ConfigurationError(f"schedule(when=...) cannot use a {type(when).__name__}")
        data = orjson.dumps(payload) if payload is not None else None
        task_id = id or str(uuid.uuid4())
        row = self.db.one("INSERT OR REPLACE INTO think_schedules (id, method, payload, kind, spec, timezone, "
                          "next_run, backfill, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                          task_id, method, data, "recurring" if schedule else "once", spec, timezone, next_run,
                          int(backfill), now)
        assert row is not None
        return _row_to_task(row)

    def get(self, task_id: str) -> ScheduledTask | None:
        row = self.db.one("SELECT * FROM think_schedules WHERE id = ?", task_id)
        return _row_to_task(row) if row else None

    def list(self) -> list[ScheduledTask]:
        return [_row_to_task(r) for r in self.db.sql("SELECT * FROM think_schedules ORDER BY next_run")]

    def cancel(self, task_id: str) -> bool:
        return bool(self.db.sql("DELETE FROM think_schedules WHERE id = ? RETURNING id", task_id))

    def next_due(self) -> float | None:
        value = self.db.value("SELECT min(next_run) FROM think_schedules")
        return float(value) if value is not None else None

    async def fire_due(self, call: Callable[[str, Any], Awaitable[Any] | Any], *, now: float | None = None) -> int:
        """Run every task due at `now` through `call(method, payload)`; returns how many ran."""
        now = self.clock() if now is None else now
        ran = 0
        for row in self.db.sql("SELECT * FROM think_schedules WHERE next_run <= ? ORDER BY next_run", now):
            task = _row_to_task(row)
            recurring = task.kind == "recurring"
            skip = recurring and now - task.next_run > MISSED_GRACE and not row["backfill"]
            if recurring:
                # Move the task on before running it: a crash mid-run must not fire it in a loop.
                schedule = parse_schedule(task.spec or "", timezone=task.timezone)
                self.db.sql("UPDATE think_schedules SET next_run = ? WHERE id = ?", schedule.next_after(now), task.id)
            if skip:
                log.info("schedule %s missed its run at %s; not backfilled", task.id, task.next_run)
                continue
            error: str | None = None
            token = _FIRING.set(task)
            try:
                result = call(task.method, task.payload)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                log.exception("scheduled %s(%s) failed", task.method, task.id)
                error = f"{type(exc).__name__}: {exc}"
            finally:
                _FIRING.reset(token)
            ran += 1
            # The framework's own wake-ups (`think:…` ids) fire often and say little: DEBUG.
            log.log(logging.DEBUG if task.id.startswith("think:") else logging.INFO, "schedule %s ran %s (%s)%s",
                    task.id, task.method, task.kind, " and failed" if error else "",
                    extra={"think": {"schedule": task.id, "method": task.method, "failed": error is not None}})
            if recurring:
                self.db.sql("UPDATE think_schedules SET runs = runs + 1, last_error = ? WHERE id = ?", error, task.id)
            else:  # done, unless the call scheduled the same id again (a wake-up that re-arms itself)
                self.db.sql("DELETE FROM think_schedules WHERE id = ? AND next_run = ? AND kind = 'once'",
                            task.id, task.next_run)
        return ran
