"""Declared scheduled tasks: what `Think.get_scheduled_tasks()` returns, kept in the schedule table.

    def get_scheduled_tasks(self):
        return {
            "morning-digest": ScheduledTaskSpec(schedule="every day at 09:00 in Europe/Prague",
                                                prompt="Write today's digest."),
            "hourly-cleanup": {"schedule": "0 * * * *", "handler": "cleanup"},
        }

On every start the declarations are reconciled into the agent's schedules (ids
`think:task:<task id>`): new ones are added, changed ones replaced, removed ones deleted; an
unchanged one keeps its next run. A declaration whose schedule does not parse is logged as an
error and skipped; the others still apply.

A run of a **prompt** task submits the prompt as a durable submission whose idempotency key is
the task id and the occurrence (`scheduled-task:<id>@<ISO time>`), so a run fired twice (a crash
between firing and recording it) starts one turn. A **handler** task calls the named method (or
the callable) with a `ScheduledTaskContext`, which carries the same idempotency key. Missed runs
are not backfilled (a run more than a minute late is skipped) unless the task says
`backfill=True`, which runs the newest missed occurrence once.
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from think.errors import ConfigurationError
from think.messages import Message
from think.scheduling.cron import Interval, parse_schedule
from think.scheduling.schedules import firing

if TYPE_CHECKING:
    from think.agent import Think

log = logging.getLogger("think.scheduling")

TASK_PREFIX = "think:task:"
FIRE_METHOD = "scheduled_tasks.fire"


@dataclass(frozen=True, kw_only=True)
class ScheduledTaskSpec:
    """One declared task: a recurring `schedule` and either a `prompt` or a `handler`."""

    schedule: str
    """A cron expression or `every 5 minutes`, `every day at 09:00 in Europe/Prague`, …"""
    prompt: str | None = None
    """Submit this as a user message on every run."""
    handler: str | Callable[..., Any] | None = None
    """A method name of the agent (or a callable) called with a `ScheduledTaskContext`."""
    timezone: str | None = None
    metadata: Any = None
    backfill: bool = False


@dataclass(frozen=True, kw_only=True)
class ScheduledTaskContext:
    """What a handler task gets for one run."""

    task_id: str
    scheduled_for: float
    """The occurrence this run is for (Unix time)."""
    scheduled_for_date: datetime
    occurrence_key: str
    idempotency_key: str
    schedule: str
    schedule_kind: Literal["cron", "interval"]
    timezone: str | None
    metadata: Any = None


def _spec(task_id: str, value: Any) -> ScheduledTaskSpec:
    if isinstance(value, Mapping):
        unknown = set(value) - {"schedule", "prompt", "handler", "timezone", "metadata", "backfill"}
        if unknown:
            raise ConfigurationError(f"scheduled task {task_id!r}: unknown field(s) {sorted(unknown)}")
        value = ScheduledTaskSpec(**value)
    if not isinstance(value, ScheduledTaskSpec):
        raise ConfigurationError(f"scheduled task {task_id!r} must be a ScheduledTaskSpec or a dict")
    if (value.prompt is None) == (value.handler is None):
        raise ConfigurationError(f"scheduled task {task_id!r} needs exactly one of prompt and handler")
    parse_schedule(value.schedule, timezone=value.timezone)  # ScheduleError with the reason
    return value


class ScheduledTasks:
    """The declared tasks of one agent: reconciled on start, run by the schedule they own."""

    def __init__(self, agent: Think) -> None:
        self.agent = agent
        self.errors: dict[str, str] = {}
        """Declarations skipped at the last reconcile, with the reason."""

    def declared(self) -> dict[str, ScheduledTaskSpec]:
        raw = self.agent.get_scheduled_tasks() or {}
        if not isinstance(raw, Mapping):
            raise ConfigurationError("get_scheduled_tasks() must return a mapping of task id to task")
        specs: dict[str, ScheduledTaskSpec] = {}
        self.errors = {}
        for task_id, value in raw.items():
            try:
                specs[str(task_id)] = _spec(str(task_id), value)
            except ConfigurationError as exc:
                self.errors[str(task_id)] = str(exc)
        return specs

    def reconcile(self) -> None:
        """Make the schedule table match the declarations (best effort: bad ones are logged)."""
        try:
            specs = self.declared()
        except ConfigurationError as exc:
            log.error("%s: %s", type(self.agent).__name__, exc)
            return
        for task_id, error in self.errors.items():
            log.error("%s: scheduled task %r is skipped: %s", type(self.agent).__name__, task_id, error)
        existing = {t.id: t for t in self.agent.get_schedules() if t.id.startswith(TASK_PREFIX)}
        for task_id, spec in specs.items():
            row = existing.pop(TASK_PREFIX + task_id, None)
            if row is not None and row.spec == spec.schedule and row.timezone == spec.timezone:
                continue
            self.agent.schedule(spec.schedule, FIRE_METHOD, {"task": task_id}, id=TASK_PREFIX + task_id,
                                timezone=spec.timezone, backfill=spec.backfill)
        for stale in existing:
            if stale[len(TASK_PREFIX):] not in self.errors:  # a typo must not forget a task's place
                self.agent.cancel_schedule(stale)

    async def fire(self, payload: Any) -> None:
        """One run of a declared task (the schedule calls this)."""
        task_id = str(payload.get("task")) if isinstance(payload, dict) else ""
        spec = self.declared().get(task_id)
        if spec is None:
            log.warning("scheduled task %r is no longer declared; not run", task_id)
            return
        current = firing()
        scheduled_for = current.next_run if current is not None else self.agent.schedules.clock()
        when = datetime.fromtimestamp(scheduled_for, UTC)
        occurrence = f"{task_id}@{when.isoformat().replace('+00:00', 'Z')}"
        key = f"scheduled-task:{occurrence}"
        if spec.prompt is not None:
            message = Message.user(spec.prompt, id=uuid.uuid5(uuid.NAMESPACE_URL, key).hex)
            metadata = {"scheduledTask": task_id, "scheduledFor": when.isoformat()}
            if spec.metadata is not None:
                metadata["metadata"] = spec.metadata
            await self.agent.submit_messages([message], idempotency_key=key, metadata=metadata)
            return
        handler = getattr(self.agent, spec.handler) if isinstance(spec.handler, str) else spec.handler
        if not callable(handler):
            raise ConfigurationError(f"scheduled task {task_id!r}: {spec.handler!r} is not a method of "
                                     f"{type(self.agent).__name__}")
        kind: Literal["cron", "interval"] = (
            "interval" if isinstance(parse_schedule(spec.schedule, timezone=spec.timezone), Interval) else "cron")
        result = handler(ScheduledTaskContext(
            task_id=task_id, scheduled_for=scheduled_for, scheduled_for_date=when, occurrence_key=occurrence,
            idempotency_key=key, schedule=spec.schedule, schedule_kind=kind, timezone=spec.timezone,
            metadata=spec.metadata))
        if inspect.isawaitable(result):
            await result
