"""`EmbeddedRuntime`: agents in this process, each in its own SQLite file under a data directory.

One process per data directory: the runtime holds an OS lock on it (`think.runtime.ownership`)
while any of its agents is open and while a server serves it, so a second process fails with
`DataDirInUse` instead of forking conversations.

Idle instances (no leases, no work) are hibernated: their database is closed and the object is
dropped, so a hibernated agent costs no memory. Waking one is opening its file and checking the
migration table: no transcript is read until it is needed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TypeVar

import anyio

from think.errors import ConfigurationError
from think.runtime import ownership
from think.runtime.agent import Agent
from think.runtime.alarms import AlarmIndex, Alarms
from think.runtime.classes import class_path, load_class
from think.runtime.naming import check_agent_name, file_name
from think.storage import Database
from think.storage.template import create_from_image, remove_database, schema_image, schema_wal

log = logging.getLogger("think.runtime")
A = TypeVar("A", bound=Agent)
Key = tuple[type[Agent], str]


def default_data_dir() -> Path:
    """Where agents keep their SQLite files unless told otherwise (`THINK_DATA_DIR` or `.think`)."""
    return Path(os.environ.get("THINK_DATA_DIR", ".think"))


class EmbeddedRuntime:
    """One live instance per `(class, name)`, persisted under `data_dir`."""

    _serves_elsewhere: tuple[type[Exception], ...] = ()
    """Errors of `get` that mean another process has the agent open (a cluster runtime's)."""

    def __init__(self, data_dir: str | Path | None = None, *, idle_timeout: float | None = 300.0) -> None:
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.idle_timeout = idle_timeout
        """Seconds an unleased, idle instance stays live; 0 hibernates at once; None never."""
        self._live: dict[Key, Agent] = {}
        self._leases: dict[Key, int] = {}
        self._last_used: dict[Key, float] = {}
        self._starting: dict[Key, anyio.Event] = {}
        self._loops: dict[Key, asyncio.AbstractEventLoop] = {}
        """The event loop each live instance started on (its tasks run there)."""
        self.clock: Callable[[], float] = time.time
        """Wall-clock time for schedules (tests may replace it)."""
        self._classes: dict[str, type[Agent]] = {}
        self._unloadable: set[str] = set()
        self._alarms: Alarms | None = None
        self._alarm_changed: anyio.Event | None = None
        self._claims = 0

    # ---- ownership: one process per data directory -----------------------------------------------

    def claim(self) -> None:
        """Hold this data directory for this process until `release()` (a server does, for its
        life); raises `DataDirInUse` if another live process holds it. Every open agent holds
        it too, so a script needs no call of its own."""
        ownership.claim(self.data_dir)
        self._claims += 1

    def release(self) -> None:
        """End one `claim()` (or one open agent's hold)."""
        if self._claims:
            self._claims -= 1
            ownership.release(self.data_dir)

    @contextmanager
    def owning(self) -> Iterator[None]:
        """Hold the data directory for the block."""
        self.claim()
        try:
            yield
        finally:
            self.release()

    # ---- alarms: waking agents whose schedules are due -------------------------------------------

    def register(self, *classes: type[Agent]) -> None:
        """Make classes known so their agents can be woken by alarms after a restart."""
        for cls in classes:
            self._classes[cls.kebab_name()] = cls

    @property
    def alarms(self) -> Alarms:
        if self._alarms is None:
            self._alarms = AlarmIndex(self.data_dir / "_alarms.db")
        return self._alarms

    def set_alarm(self, cls: type[Agent], name: str, due: float | None) -> None:
        """Record when `(cls, name)` next needs to run (None: never)."""
        self.register(cls)
        self.alarms.set(cls.kebab_name(), name, due, class_path(cls))
        if self._alarm_changed is not None:
            self._alarm_changed.set()

    async def fire_due_alarms(self, *, now: float | None = None) -> int:
        """Wake every agent with a due alarm and run its due schedules; returns how many ran."""
        now = self.clock() if now is None else now
        ran = 0
        for class_name, name, path in self.alarms.due(now):
            cls = self._classes.get(class_name) or self._import_class(class_name, path)
            if cls is None:
                continue  # a class this process cannot load; its alarm waits for one that can
            try:
                async with self.lease(cls, name) as agent:
                    ran += await agent.run_due_schedules(now=now)
            except self._serves_elsewhere:
                continue  # open in another process of a cluster, which fires its alarms
        return ran

    def _import_class(self, class_name: str, path: str | None) -> type[Agent] | None:
        """The class an alarm row names, imported (a sub-agent's class, say, which no server
        route registers); None if it cannot be found or is not that agent class."""
        if not path or path in self._unloadable:
            return None
        cls = load_class(path)
        if cls is None or cls.kebab_name() != class_name:
            log.warning("cannot wake %s agents: class %s is not importable here", class_name, path)
            self._unloadable.add(path)
            return None
        self.register(cls)
        return cls

    async def run_alarms(self, *, max_sleep: float = 30.0) -> None:
        """Fire alarms forever (run it in the server's task group)."""
        while True:
            self._alarm_changed = anyio.Event()
            try:
                await self.fire_due_alarms()
            except Exception:
                log.exception("firing alarms failed; retrying shortly")
            earliest = self.alarms.earliest()
            wait = max_sleep if earliest is None else min(max_sleep, max(0.0, earliest - self.clock()))
            with anyio.move_on_after(wait):
                await self._alarm_changed.wait()

    def path_for(self, cls: type[Agent], name: str) -> Path:
        return self.data_dir / cls.kebab_name() / f"{file_name(name)}.db"

    def live(self) -> list[Agent]:
        return list(self._live.values())

    async def get(self, cls: type[A], name: str) -> A:
        if not (isinstance(cls, type) and issubclass(cls, Agent)):
            raise ConfigurationError(f"{cls!r} is not an Agent class")
        check_agent_name(name)
        key: Key = (cls, name)
        while True:
            if (agent := self._live.get(key)) is not None and not self._left_behind(key):
                self._last_used[key] = time.monotonic()
                return agent  # type: ignore[return-value]
            if (starting := self._starting.get(key)) is not None:
                await starting.wait()
                continue
            break
        event = self._starting[key] = anyio.Event()
        try:
            self.claim()  # held while the instance is live; raises if another process owns the dir
            try:
                db, created = self._open_database(cls, name)
                self.register(cls)
                instance = cls(name, db=db, runtime=self)
                try:
                    await instance._start(new_database=created)
                except BaseException:
                    db.close()
                    if created and not instance._migrated:
                        self._discard_new(cls, name)  # as if the new database's migrations rolled back
                    raise
            except BaseException:
                self.release()
                raise
            self._live[key] = instance
            self._loops[key] = asyncio.get_running_loop()
            self._last_used[key] = time.monotonic()
            return instance
        finally:
            del self._starting[key]
            event.set()

    def _open_database(self, cls: type[Agent], name: str) -> tuple[Database, bool]:
        """The agent's database, opened; True if this call created it."""
        path = self.path_for(cls, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A new agent's file starts as the framework's schema image (think.storage.template).
        migrations = cls.framework_migrations()
        created = create_from_image(path, schema_image(migrations), schema_wal(migrations))
        return Database(path), created

    def _discard_new(self, cls: type[Agent], name: str) -> None:
        remove_database(self.path_for(cls, name))

    def _left_behind(self, key: Key) -> bool:
        """An instance is bound to the event loop it started on. One whose loop has ended (a
        script's `anyio.run` that leased it, then returned while its recovery waited out a
        backoff) has lost its tasks with that loop: it is dropped, its database closed, and the
        next use starts the agent again, which picks up every durable record it left (fibers,
        submissions, schedules). Nothing is half-done in memory only."""
        loop = self._loops.get(key)
        if loop is None or loop is asyncio.get_running_loop():
            return False
        if loop.is_running():
            raise ConfigurationError(f"{key[0].__name__} {key[1]!r} is live on another event loop; "
                                     "use one runtime per event loop")
        agent = self._live.pop(key)
        del self._loops[key]
        self._last_used.pop(key, None)
        agent.db.close()
        self.release()
        log.info("%s %r was left live by an event loop that has ended; it starts again", key[0].__name__, key[1])
        return True

    @asynccontextmanager
    async def lease(self, cls: type[A], name: str) -> AsyncIterator[A]:
        key: Key = (cls, name)
        self._leases[key] = self._leases.get(key, 0) + 1
        try:
            yield await self.get(cls, name)
        finally:
            self._leases[key] -= 1
            if not self._leases[key]:
                del self._leases[key]
                self._last_used[key] = time.monotonic()
                if self.idle_timeout == 0:  # open_agent(): its last state stays readable after
                    await self._put_to_sleep(key, let_go=False)

    def _idle(self, key: Key) -> bool:
        agent = self._live.get(key)
        return agent is not None and not self._leases.get(key) and not agent.is_busy()

    async def hibernate(self, cls: type[Agent], name: str) -> bool:
        return await self._put_to_sleep((cls, name), let_go=True)

    async def _put_to_sleep(self, key: Key, *, let_go: bool) -> bool:
        if not self._idle(key):
            return False
        agent = self._live.pop(key)
        self._loops.pop(key, None)
        self._last_used.pop(key, None)
        try:
            await agent._hibernate()
            if let_go:
                agent._let_go()
        finally:
            self.release()
        return True

    async def hibernate_idle(self, *, older_than: float | None = None) -> int:
        """Hibernate every idle instance unused for `older_than` seconds (default: idle_timeout)."""
        limit = self.idle_timeout if older_than is None else older_than
        if limit is None:
            return 0
        now = time.monotonic()
        count = 0
        for key in list(self._live):
            if now - self._last_used.get(key, now) >= limit and await self.hibernate(*key):
                count += 1
        return count

    async def run_sweeper(self, *, interval: float = 30.0) -> None:
        """Hibernate idle instances forever (run it in the server's task group)."""
        while True:
            await anyio.sleep(interval)
            await self.hibernate_idle()

    async def close(self) -> None:
        for key in list(self._live):
            agent = self._live.pop(key)
            try:
                if self._loops.pop(key, None) in (None, asyncio.get_running_loop()):
                    await agent._hibernate()
                else:  # its loop has ended, and its tasks with it
                    agent.db.close()
            finally:
                self.release()
        self._last_used.clear()
        if self._alarms is not None:
            self._alarms.close()
            self._alarms = None


_shared: dict[Path, EmbeddedRuntime] = {}


def shared_runtime(data_dir: str | Path | None = None) -> EmbeddedRuntime:
    """The process-wide runtime for a data directory (what `open_agent` and `think serve` share)."""
    path = (Path(data_dir) if data_dir is not None else default_data_dir()).resolve()
    runtime = _shared.get(path)
    if runtime is None:
        runtime = _shared[path] = EmbeddedRuntime(path, idle_timeout=0)
    return runtime


@asynccontextmanager
async def open_agent(cls: type[A], name: str = "default", *, data_dir: str | Path | None = None) -> AsyncIterator[A]:
    """The live agent instance at `(cls, name)`, for scripts, notebooks and tests.

        async with open_agent(Assistant, "alice", data_dir="data") as agent:
            result = await agent.save_messages(["Hello!"])

    It is the same instance a server in this process would route to; when the block ends and
    nothing else holds it, it is hibernated (its database closed).
    """
    async with shared_runtime(data_dir).lease(cls, name) as agent:
        yield agent
