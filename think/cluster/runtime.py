"""`ClusterRuntime`: agents served by N processes over one PostgreSQL.

Every process is the same: any of them can open any agent, and at most one has it open at a time
(its advisory lock, `think.cluster.store`). A request for an agent another process has open is
forwarded there by the server (`think.cluster.proxy`); so every socket of an agent ends in the one
process that runs its turns, and streams, resumes and end-of-turn transcripts behave as in one
process. Agents are virtual actors: their database lives in Postgres between uses
(`think.cluster.shipped`), and a process keeps only a cache file while it has the agent open.

A process that dies leaves its agents marked open with no lock behind them: every process looks
for such orphans (`orphan_interval`) and opens them, which runs the agent's start-up recovery
(interrupted turns, submissions, fibers) exactly as a restarted embedded server would. The keep-
alive alarms of interrupted turns sit in Postgres too, so even an agent nobody asks for is woken.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx

from think.cluster.shipped import ShippedDatabase
from think.cluster.store import ClusterAlarms, ClusterStore
from think.errors import ConfigurationError, StorageError
from think.runtime.agent import Agent
from think.runtime.alarms import Alarms
from think.runtime.base import AgentElsewhere
from think.runtime.classes import class_path
from think.runtime.embedded import EmbeddedRuntime
from think.runtime.remote import Emit
from think.storage import Database
from think.storage.template import remove_database, schema_image

log = logging.getLogger("think.cluster")
A = TypeVar("A", bound=Agent)


SESSION_GRACE = 10.0
"""Seconds a process that lost its database session has to shut down before it exits anyway."""
LOST_EXIT_CODE = 4
"""The exit status of `think serve` after it lost its database session (restart it)."""

HANDOVER_WAIT = 5.0
"""Seconds `get` waits for an agent that is changing hands (locked, but its owner not recorded)."""


class ChangingHands(StorageError):
    """The agent's lock is held but no process is recorded as its owner (for a moment)."""


def agent_key(cls: type[Agent], name: str) -> str:
    return f"{cls.kebab_name()}/{name}"


def stop_process(request_stop: Callable[[], object] | None = None, *, grace: float = SESSION_GRACE) -> None:
    """What a server does once its session is lost: ask the server to stop (`request_stop`,
    default a SIGTERM to this process: any ASGI server shuts down gracefully on it, closing its
    sockets so clients reconnect to another process), and exit with `LOST_EXIT_CODE` after
    `grace` seconds whatever is still running, so a supervisor restarts it."""
    timer = threading.Timer(grace, os._exit, (LOST_EXIT_CODE,))
    timer.daemon = True
    timer.start()
    if request_stop is not None:
        request_stop()
    else:
        signal.raise_signal(signal.SIGTERM)


class ClusterRuntime(EmbeddedRuntime):
    """The `AgentRuntime` of one process of a cluster (see the module docstring)."""

    _serves_elsewhere = (AgentElsewhere,)

    def __init__(self, database: str, *, node_url: str | None = None, node_id: str | None = None,
                 idle_timeout: float | None = 60.0, orphan_interval: float = 0.5,
                 cache_dir: str | Path | None = None) -> None:
        if not database.startswith(("postgresql://", "postgres://")):
            raise ConfigurationError(f"the cluster database must be a postgresql:// URL, not {database!r}")
        self._cache = Path(cache_dir) if cache_dir is not None else Path(tempfile.mkdtemp(prefix="think-node-"))
        super().__init__(self._cache, idle_timeout=idle_timeout)
        self.database = database
        self.node_url = node_url or os.environ.get("THINK_NODE_URL") or "http://127.0.0.1:8000"
        self.node_id = node_id or os.environ.get("THINK_NODE_ID") or f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        self.orphan_interval = orphan_interval
        """Seconds between looks for agents a dead process had open."""
        self._store: ClusterStore | None = None
        self._http: httpx.AsyncClient | None = None
        self.session_lost = False
        """True once this process's database session broke: it serves no agent any more."""

    @property
    def store(self) -> ClusterStore:
        if self._store is None:
            self._store = ClusterStore(self.database, node_id=self.node_id, node_url=self.node_url)
        return self._store

    @property
    def alarms(self) -> Alarms:
        if self._alarms is None:
            self._alarms = ClusterAlarms(self.store)
        return self._alarms

    def agent_class(self, kebab: str, path: str | None) -> type[Agent] | None:
        """The agent class `kebab` (registered here, or imported from `path`)."""
        return self._classes.get(kebab) or self._import_class(kebab, path)

    async def call_owner(self, url: str, request: dict[str, Any], on_event: Emit | None) -> Any:
        """Run a `think.runtime.remote` operation in the process at `url`, which has its agent open."""
        from think.cluster.peers import call_peer

        if self._http is None:
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))
        return await call_peer(self._http, self.store.secret, url, request, on_event)

    def owner_of(self, cls: type[Agent], name: str) -> str | None:
        """The URL of the process that has the agent open (None: none has)."""
        return self.store.owner_url(agent_key(cls, name))

    def remove(self, cls: type[Agent], name: str) -> bool:
        """Delete a closed agent from the cluster (its image, WAL and alarm); False if a process
        has it open."""
        key = agent_key(cls, name)
        if not self.store.acquire(key):
            return False
        try:
            self.store.forget(key)
            self.store.set_alarm(cls.kebab_name(), name, None)
        finally:
            self.store.release(key)
        return True

    def claim(self) -> None:
        """Also connect to the cluster database (a server does at start-up: a wrong URL fails it)."""
        _ = self.store
        super().claim()

    def drain(self) -> None:
        """The process is shutting down: agents closed from now on are let go without writing a
        new image (see `think.cluster.shipped`)."""
        if self._store is not None:
            self._store.draining = True

    def healthy(self) -> bool:
        """True while this process's cluster session is up (what `/_think/health` reports)."""
        try:
            return self.store.healthy and not self.store.draining and self.store.ping()
        except StorageError:
            return False

    # ---- opening and closing agents ----------------------------------------------------------------

    def _open_database(self, cls: type[Agent], name: str) -> tuple[Database, bool]:
        key = agent_key(cls, name)
        store = self.store
        if self.session_lost:
            raise StorageError("this process lost its cluster database session; it is stopping")
        if not store.acquire(key):
            raise AgentElsewhere(key, self._owner_url(key))
        try:
            path = self.path_for(cls, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            remove_database(path)  # a cache file is never trusted: Postgres has the agent
            loaded = store.load(key)
            if loaded is None:
                image, wal = schema_image(cls.framework_migrations()), b""
                store.create(key, cls.kebab_name(), name, class_path(cls), image)
            else:
                image, wal = loaded
            path.write_bytes(image)
            if wal:
                Path(f"{path}-wal").write_bytes(wal)
            return ShippedDatabase(path, store=store, key=key, shipped=len(wal)), loaded is None
        except BaseException:
            store.release(key)
            raise

    def _owner_url(self, key: str) -> str:
        url = self.store.owner_url(key)
        if url is None:  # locked by a process that has not recorded itself yet, or just let go
            raise ChangingHands(f"{key} is changing hands; try again")
        return url

    async def get(self, cls: type[A], name: str) -> A:
        """As the embedded runtime's; `AgentElsewhere` if another process has it open. An agent
        that is changing hands this instant (its lock taken, its owner not yet recorded) is
        waited for, `HANDOVER_WAIT` seconds at most."""
        with anyio.fail_after(HANDOVER_WAIT):
            while True:
                try:
                    return await super().get(cls, name)
                except ChangingHands:
                    await anyio.sleep(0.01)

    def _discard_new(self, cls: type[Agent], name: str) -> None:
        self.store.forget(agent_key(cls, name))

    # ---- waking: alarms and orphans ----------------------------------------------------------------

    async def wake_orphans(self) -> int:
        """Take over the agents of dead processes: one with an alarm (an interrupted turn's
        keep-alive, a submission's, a schedule) is opened here at once, which runs its recovery;
        one without is only marked closed (everything it committed is in Postgres already).
        Returns how many were opened."""
        taken = 0
        for orphan in self.store.orphans():
            cls = self._classes.get(orphan.agent_class) or self._import_class(orphan.agent_class, orphan.class_path)
            if not orphan.alarm or cls is None:
                if self.store.acquire(orphan.key):
                    try:
                        self.store.let_go_orphan(orphan.key, orphan.node_id)
                    finally:
                        self.store.release(orphan.key)
                continue
            try:
                async with self.lease(cls, orphan.name):
                    taken += 1
                    log.info("took over %s %r from a process that died", orphan.agent_class, orphan.name)
            except AgentElsewhere:
                continue  # another process took it first
        return taken

    async def run_alarms(self, *, max_sleep: float = 30.0) -> None:
        """Fire due alarms and take over orphans, polling Postgres every `orphan_interval`."""
        while True:
            try:
                await self.fire_due_alarms()
                await self.wake_orphans()
            except Exception:
                log.exception("waking agents failed; retrying shortly")
            await anyio.sleep(self.orphan_interval)

    async def watch_session(self, on_lost: Callable[[], object]) -> None:
        """Check the database session every `orphan_interval` seconds; once it is gone (the
        database restarted, the connection was cut, an operator ended it) call `on_lost` and
        return. Such a process holds no agent's lock any more: another process may have taken
        any of them over, so it must not serve them; the server stops (see `stop_process`)."""
        while True:
            await anyio.sleep(self.orphan_interval)
            store = self._store
            if store is None:
                return
            if not store.draining and (not store.healthy or not store.ping()):
                break
        self.session_lost = True
        log.error("lost the cluster database session (node %s): no agent is served here any more; stopping",
                  self.node_id)
        on_lost()

    async def close(self) -> None:
        try:
            await super().close()
            if self._http is not None:
                await self._http.aclose()
                self._http = None
        finally:
            if self._store is not None:
                if self._store.draining and self._store.healthy:
                    try:
                        self._store.let_go_all()
                    except StorageError as exc:
                        log.warning("letting the agents go at shutdown failed: %s", exc)
                self._store.close()
                self._store = None
            shutil.rmtree(self._cache, ignore_errors=True)
