"""`Agent`: an addressable instance with its own SQLite database, state and callable methods.

This is the Durable Object of the original, in Python: one live instance per `(class, name)`,
created by an `AgentRuntime`, whose mutations all run on one event loop. `Think` builds the chat
lifecycle on top of it.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import orjson

from think.errors import ConfigurationError
from think.protocol.limits import check_depth
from think.runtime.naming import kebab_case
from think.scheduling.schedules import MIGRATIONS as SCHEDULE_MIGRATIONS
from think.scheduling.schedules import ScheduledTask, Schedules, When
from think.storage import Database, Migration, Row, migrate, migration

if TYPE_CHECKING:
    import sqlite3

    from think.runtime.base import AgentRuntime

log = logging.getLogger("think.agent")


@migration("think.agent.001_kv")
def _m001_kv(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE think_kv (key TEXT PRIMARY KEY, value BLOB NOT NULL)")


_FRAMEWORK_MIGRATIONS: dict[type, tuple[Migration, ...]] = {}


def _framework_migrations_of(cls: type[Agent]) -> tuple[Migration, ...]:
    # Computed once per class: every start of an instance asks (twice for a new database).
    if (known := _FRAMEWORK_MIGRATIONS.get(cls)) is not None:
        return known
    seen: list[Migration] = []
    for klass in reversed(cls.__mro__):
        for m in klass.__dict__.get("_framework_migrations", ()):
            if m not in seen:
                seen.append(m)
    known = _FRAMEWORK_MIGRATIONS[cls] = tuple(seen)
    return known


class Agent:
    """Base class of every agent. Subclass `Think` for chat agents."""

    initial_state: ClassVar[Any] = None
    """State before the first `set_state()`; None means the agent has no state."""
    migrations: ClassVar[Sequence[Migration]] = ()
    """Your own schema migrations, applied in order after the framework's."""
    agent_class_name: ClassVar[str | None] = None
    """The URL segment for this class; default: the class name in kebab case."""

    _framework_migrations: ClassVar[tuple[Migration, ...]] = (_m001_kv, *SCHEDULE_MIGRATIONS)

    def __init__(self, name: str, *, db: Database, runtime: AgentRuntime | None = None) -> None:
        self.name = name
        self.db = db
        self.runtime = runtime
        self._state: Any = None
        self._state_loaded = False
        self._state_listeners: list[Any] = []
        self._migrated = False
        self._blank = False
        self.schedules = Schedules(db, clock=getattr(runtime, "clock", time.time))

    @classmethod
    def kebab_name(cls) -> str:
        return cls.agent_class_name or kebab_case(cls.__name__)

    @classmethod
    def framework_migrations(cls) -> list[Migration]:
        """The framework's migrations for this class (base classes first); see `all_migrations`."""
        return list(_framework_migrations_of(cls))

    @classmethod
    def all_migrations(cls) -> list[Migration]:
        """The framework's migrations, then the class's own `migrations`, in the order they run."""
        return cls.framework_migrations() + list(cls.migrations)

    # ---- lifecycle -----------------------------------------------------------------------------

    async def _start(self, *, new_database: bool = False) -> None:
        """Bring the instance up: migrations, then framework start-up, then `on_start()`.

        `new_database`: the runtime created the database from the framework's schema image for
        this start. Unless one of the class's own migrations then ran (it may write rows), the
        database is blank, and the framework's start-up skips looking for work to restore."""
        applied = migrate(self.db, self.all_migrations())
        self._migrated = True
        self._blank = new_database and not applied
        await self._framework_start()
        await self.on_start()

    async def _framework_start(self) -> None:
        """Subclasses of the framework restore their own state here (before `on_start`)."""

    async def on_start(self) -> None:
        """Called once each time the instance comes up (first use, and after hibernation)."""

    def is_busy(self) -> bool:
        """True while the instance has work that must keep it in memory."""
        return False

    async def _hibernate(self) -> None:
        """Release memory and the database handle; the next use starts the instance again."""
        self.db.close()

    def _let_go(self) -> None:
        """After `runtime.hibernate()` (explicit, or the idle sweep): drop what the instance holds
        in memory (transcripts).

        The runtime is done with it, but cycles among its parts can keep it alive until a full
        collection, and with it everything it loaded. Not done when a runtime closes or an
        `open_agent()` block ends, after which the agent's last state may still be read
        (`agent.messages`)."""

    # ---- schedules -----------------------------------------------------------------------------

    def schedule(self, when: When, method: str | Callable[..., Any], payload: Any = None, *,
                 id: str | None = None, timezone: str | None = None, backfill: bool = False) -> ScheduledTask:
        """Call `method(payload)` on this agent later, durably (it survives restarts).

        `when` is a delay in seconds or a `timedelta`, an aware `datetime`, or a recurring schedule:
        a cron expression or `"every 5 minutes"`, `"every day at 09:00 in Europe/Prague"`.
        `method` is the name of one of this agent's methods (or the bound method itself).
        """
        name = method if isinstance(method, str) else getattr(method, "__name__", "")
        if not callable(_resolve(self, name)):
            raise ConfigurationError(f"{type(self).__name__} has no method {name!r} to schedule")
        task = self.schedules.add(when, name, payload, id=id, timezone=timezone, backfill=backfill)
        self._sync_alarm()
        return task

    def get_schedules(self) -> list[ScheduledTask]:
        return self.schedules.list()

    def cancel_schedule(self, task_id: str) -> bool:
        cancelled = self.schedules.cancel(task_id)
        self._sync_alarm()
        return cancelled

    async def run_due_schedules(self, *, now: float | None = None) -> int:
        """Run this agent's due schedules now (the runtime's alarms call this)."""

        async def call(method: str, payload: Any) -> None:
            handler = _resolve(self, method)
            if not callable(handler):
                raise ConfigurationError(f"scheduled method {method!r} does not exist on {type(self).__name__}")
            result = handler(payload)
            if inspect.isawaitable(result):
                await result

        ran = await self.schedules.fire_due(call, now=now)
        self._sync_alarm()
        return ran

    def _sync_alarm(self) -> None:
        set_alarm = getattr(self.runtime, "set_alarm", None)
        if set_alarm is not None:
            set_alarm(type(self), self.name, self.schedules.next_due())

    # ---- HTTP ----------------------------------------------------------------------------------

    async def on_request(self, request: Any) -> Any:
        """Answer an HTTP request to this agent's address (`/agents/<class>/<name>/…`).

        `request` is a Starlette `Request`; return a Starlette `Response`. The default answers
        404 "Not implemented", as the original does.
        """
        from starlette.responses import PlainTextResponse  # only servers need Starlette

        return PlainTextResponse("Not implemented", status_code=404)

    # ---- storage -------------------------------------------------------------------------------

    def sql(self, query: str, *params: Any) -> list[Row]:
        """Run one SQL statement on this agent's own database; rows come back as dicts."""
        return self.db.sql(query, *params)

    def kv_get(self, key: str, default: Any = None) -> Any:
        raw = self.db.value("SELECT value FROM think_kv WHERE key = ?", key)
        return default if raw is None else orjson.loads(raw)

    def kv_set(self, key: str, value: Any) -> None:
        if value is None:
            self.db.sql("DELETE FROM think_kv WHERE key = ?", key)
        else:
            self.db.sql("INSERT INTO think_kv (key, value) VALUES (?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET value = excluded.value", key, orjson.dumps(value))

    # ---- state ---------------------------------------------------------------------------------

    @property
    def state(self) -> Any:
        """The agent's state: the last `set_state()` value, else `initial_state`."""
        if not self._state_loaded:
            stored = self.kv_get("_state", _MISSING)
            self._state = self.initial_state if stored is _MISSING else stored
            self._state_loaded = True
        return self._state

    @property
    def has_state(self) -> bool:
        return self.state is not None

    async def set_state(self, state: Any, *, source: str | None = None) -> None:
        """Persist new state, tell connected clients, then call `on_state_update`.

        `state` must be JSON-serializable and nest at most `MAX_DEPTH` levels of arrays and objects
        (`think.protocol.limits`; `TooDeep` otherwise, and nothing changes). `source` is the
        connection id that sent it, if any.
        """
        check_depth(state, "state")
        orjson.dumps(state)  # raises TypeError for values that cannot be stored or sent
        self.kv_set("_state", state)
        self._state, self._state_loaded = state, True
        for listener in tuple(self._state_listeners):
            try:
                await listener(state, source)
            except Exception:
                log.exception("a state listener failed")
        await self.on_state_update(state, source)

    async def on_state_update(self, state: Any, source: str | None) -> None:
        """Called after every state change."""


_MISSING: Any = object()


def _resolve(agent: Agent, name: str) -> Any:
    """`method` or a dotted path to one (`"submissions.wake"`: a method of a component)."""
    target: Any = agent
    for part in name.split("."):
        target = getattr(target, part, None)
    return target
