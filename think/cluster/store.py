"""`ClusterStore`: this process's one connection to the cluster's PostgreSQL.

What lives in Postgres (created by `migrate_schema`, also `think db migrate`):

    think_nodes      the serving processes: id, the URL other processes reach it at
    think_agents     one row per agent: its SQLite image, the node that has it open (if any)
    think_agent_wal  the WAL frames committed since that image, in commit order (both zlib-compressed)
    think_alarms     when each agent next needs to wake (the embedded runtime's alarm index)
    think_cluster    the cluster's secret, which signs the calls between its processes (`peers`)

Ownership is a session-level advisory lock per agent (a 64-bit hash of its key) taken on this
connection: Postgres drops it the moment the process dies, so a `kill -9` frees the agent for
another process at once. Every write of an agent's data goes over the same connection that holds
its lock, so a process whose session is gone cannot write for an agent any more (fencing).

Calls are synchronous and short (one loopback round trip each), made from the event loop like
the SQLite calls they accompany.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

from think.errors import StorageError

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("think.cluster.001_agents", """
        CREATE TABLE think_nodes (node_id text PRIMARY KEY, url text NOT NULL, lock_key bigint NOT NULL,
                                  started_at double precision NOT NULL);
        CREATE TABLE think_agents (agent_key text PRIMARY KEY, agent_class text NOT NULL, name text NOT NULL,
                                   class_path text, lock_key bigint NOT NULL, node_id text,
                                   image bytea NOT NULL, generation bigint NOT NULL DEFAULT 0,
                                   updated_at double precision NOT NULL);
        CREATE INDEX think_agents_open ON think_agents (node_id) WHERE node_id IS NOT NULL;
        CREATE TABLE think_agent_wal (id bigserial PRIMARY KEY, agent_key text NOT NULL, frames bytea NOT NULL);
        CREATE INDEX think_agent_wal_agent ON think_agent_wal (agent_key, id);
        CREATE TABLE think_alarms (agent_class text NOT NULL, name text NOT NULL, due double precision NOT NULL,
                                   class_path text, PRIMARY KEY (agent_class, name));
        CREATE INDEX think_alarms_due ON think_alarms (due);
    """),
    ("think.cluster.002_secret", """
        CREATE TABLE think_cluster (id integer PRIMARY KEY CHECK (id = 1), secret text NOT NULL);
    """),
)
_UPSERT_ALARM = ("INSERT INTO think_alarms (agent_class, name, due, class_path) VALUES (%s, %s, %s, %s) "
                 "ON CONFLICT (agent_class, name) DO UPDATE SET due = excluded.due, "
                 "class_path = coalesce(excluded.class_path, think_alarms.class_path)")
_MIGRATION_LOCK = 0x7468696E6B  # "think": one migrator at a time


def _pack(data: bytes) -> bytes:
    """Images and WAL frames are stored zlib-compressed: SQLite pages are mostly free space."""
    return zlib.compress(data, 1)


def lock_key(text: str) -> int:
    """The advisory lock number of an agent or node key (signed 64 bits, as Postgres takes it)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


def connect(url: str, application_name: str = "think") -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=10, application_name=application_name)
    except psycopg.Error as exc:
        raise StorageError(f"cannot connect to the cluster database: {exc}") from exc


def migrate_schema(conn: psycopg.Connection[Any]) -> list[str]:
    """Apply the cluster schema's migrations this database has not seen; the names applied."""
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS think_schema (name text PRIMARY KEY, "
                     "applied_at double precision NOT NULL)")
        done = {row[0] for row in conn.execute("SELECT name FROM think_schema")}
        for name, ddl in MIGRATIONS:
            if name not in done:
                conn.execute(ddl)  # our own constant DDL
                conn.execute("INSERT INTO think_schema (name, applied_at) VALUES (%s, %s)", (name, time.time()))
                applied.append(name)
    return applied


@dataclass(frozen=True)
class Orphan:
    """An agent a dead node had open; `alarm`: it has an alarm (unfinished work, a schedule)."""

    key: str
    agent_class: str
    name: str
    class_path: str | None
    node_id: str
    alarm: bool


class ClusterStore:
    """The node's session: its liveness lock, the agents it holds, their images and WAL."""

    def __init__(self, url: str, *, node_id: str, node_url: str) -> None:
        self.node_id = node_id
        self.node_url = node_url
        self._conn = connect(url, f"think node {node_id}")  # (as pg_stat_activity shows it)
        # As SQLite's synchronous=NORMAL in the embedded runtime: a crash of the *database server*
        # may lose the last commits (never consistency); a crash of this process loses nothing.
        self._conn.execute("SET synchronous_commit = off")
        self._lock = threading.Lock()
        self.healthy = True
        """False once the session broke: this process holds no agent any more."""
        self.draining = False
        """True while the process shuts down: agents are let go without a new image (`let_go_all`),
        and their alarm changes are kept to be written together with it."""
        self._deferred: dict[tuple[str, str], tuple[float | None, str | None]] = {}
        self._deferred_wal: list[tuple[str, bytes]] = []
        migrate_schema(self._conn)
        self._run("INSERT INTO think_cluster (id, secret) VALUES (1, %s) ON CONFLICT (id) DO NOTHING",
                  secrets.token_hex(32))
        self.secret = str(self._one("SELECT secret FROM think_cluster WHERE id = 1")[0]).encode()
        """The key of the calls between this cluster's processes (`think.cluster.peers`)."""
        node_lock = lock_key(f"node:{node_id}")
        if not self._one("SELECT pg_try_advisory_lock(%s)", node_lock)[0]:
            raise StorageError(f"another live process already serves as cluster node {node_id!r}")
        self._run("INSERT INTO think_nodes (node_id, url, lock_key, started_at) VALUES (%s, %s, %s, %s) "
                  "ON CONFLICT (node_id) DO UPDATE SET url = excluded.url, started_at = excluded.started_at",
                  node_id, node_url, node_lock, time.time())

    # ---- plumbing --------------------------------------------------------------------------------

    @contextmanager
    def _session(self) -> Iterator[psycopg.Connection[Any]]:
        with self._lock:
            try:
                yield self._conn
            except psycopg.OperationalError as exc:
                self.healthy = False
                raise StorageError(f"the cluster database connection failed: {exc}") from exc
            except psycopg.Error as exc:
                raise StorageError(f"cluster database error: {exc}") from exc

    def _run(self, query: str, *params: Any) -> None:
        with self._session() as conn:
            conn.execute(query, params)  # our own constant SQL

    def _one(self, query: str, *params: Any) -> tuple[Any, ...]:
        with self._session() as conn:
            row = conn.execute(query, params).fetchone()
        assert row is not None
        return tuple(row)

    def _all(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with self._session() as conn:
            return [tuple(row) for row in conn.execute(query, params).fetchall()]

    def ping(self) -> bool:
        try:
            self._one("SELECT 1")
        except StorageError:
            return False
        return True

    def close(self) -> None:
        """End the session: every lock this node holds is released with it."""
        with self._lock:
            self._conn.close()
        self.healthy = False

    # ---- agents ----------------------------------------------------------------------------------

    def acquire(self, key: str) -> bool:
        """Take the agent's lock for this node; False if another node holds it."""
        return bool(self._one("SELECT pg_try_advisory_lock(%s)", lock_key(key))[0])

    def release(self, key: str) -> None:
        if self.healthy:
            try:
                self._run("SELECT pg_advisory_unlock(%s)", lock_key(key))
            except StorageError:
                pass  # the session is gone, and its locks with it

    def owner_url(self, key: str) -> str | None:
        """The URL of the node that has the agent open (None: nobody, or it is just changing hands)."""
        rows = self._all("SELECT n.url FROM think_agents a JOIN think_nodes n ON n.node_id = a.node_id "
                         "WHERE a.agent_key = %s", key)
        return str(rows[0][0]) if rows else None

    def load(self, key: str) -> tuple[bytes, bytes] | None:
        """The agent's image and the WAL bytes committed after it (None: a new agent), marking it
        open here. Call with its lock held."""
        with self._session() as conn, conn.transaction():
            row = conn.execute("UPDATE think_agents SET node_id = %s WHERE agent_key = %s RETURNING image",
                               (self.node_id, key)).fetchone()
            if row is None:
                return None
            frames = conn.execute("SELECT frames FROM think_agent_wal WHERE agent_key = %s ORDER BY id",
                                  (key,)).fetchall()
        return zlib.decompress(row[0]), b"".join(zlib.decompress(f[0]) for f in frames)

    def create(self, key: str, agent_class: str, name: str, class_path: str, image: bytes) -> None:
        """Record a new agent, open here. Call with its lock held."""
        self._run("INSERT INTO think_agents (agent_key, agent_class, name, class_path, lock_key, node_id, image, "
                  "updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                  key, agent_class, name, class_path, lock_key(key), self.node_id, _pack(image), time.time())

    def forget(self, key: str) -> None:
        """Drop a new agent whose start failed (as if it had never been created)."""
        with self._session() as conn, conn.transaction():
            conn.execute("DELETE FROM think_agent_wal WHERE agent_key = %s", (key,))
            conn.execute("DELETE FROM think_agents WHERE agent_key = %s", (key,))

    def append_wal(self, key: str, frames: bytes) -> None:
        if self.draining:  # written with `let_go_all`, in one round trip for every agent
            self._deferred_wal.append((key, _pack(frames)))
            return
        self._run("INSERT INTO think_agent_wal (agent_key, frames) VALUES (%s, %s)", key, _pack(frames))

    def checkpoint(self, key: str, image: bytes) -> None:
        """Replace the agent's image and WAL by a new image, and mark it closed, atomically."""
        with self._session() as conn, conn.transaction():
            conn.execute("UPDATE think_agents SET image = %s, generation = generation + 1, node_id = NULL, "
                         "updated_at = %s WHERE agent_key = %s", (_pack(image), time.time(), key))
            conn.execute("DELETE FROM think_agent_wal WHERE agent_key = %s", (key,))

    def let_go_all(self) -> None:
        """Mark every agent this node has open closed, keeping their images and WAL rows (a fast
        shutdown: the next process to open one replays its WAL), with the commits and alarm changes
        the drain deferred, in one transaction. Call just before `close()`. A process killed
        before it ends leaves Postgres what its agents had committed before the drain (a prefix of
        their commits, as any kill does)."""
        deferred, self._deferred = self._deferred, {}
        wal, self._deferred_wal = self._deferred_wal, []
        gone = [key for key, (due, _) in deferred.items() if due is None]
        due = [(c, n, d, p) for (c, n), (d, p) in deferred.items() if d is not None]
        with self._session() as conn, conn.transaction():
            if gone:
                conn.execute("DELETE FROM think_alarms WHERE (agent_class, name) IN (SELECT * FROM unnest(%s::text[], "
                             "%s::text[]))", ([c for c, _ in gone], [n for _, n in gone]))
            if due:
                conn.cursor().executemany(_UPSERT_ALARM, due)
            if wal:
                conn.cursor().executemany("INSERT INTO think_agent_wal (agent_key, frames) VALUES (%s, %s)", wal)
            conn.execute("UPDATE think_agents SET node_id = NULL WHERE node_id = %s", (self.node_id,))

    def let_go_orphan(self, key: str, node_id: str) -> None:
        """Mark an agent a dead node had open closed (call with its lock held): nothing of it is
        unfinished, and every commit of it is here already."""
        self._run("UPDATE think_agents SET node_id = NULL WHERE agent_key = %s AND node_id = %s", key, node_id)

    def orphans(self, limit: int = 100) -> list[Orphan]:
        """Agents a node had open when it died (its lock is gone), those with an alarm first."""
        return [Orphan(str(k), str(c), str(n), p, str(node), bool(alarm)) for k, c, n, p, node, alarm in self._all(
            "SELECT a.agent_key, a.agent_class, a.name, a.class_path, a.node_id, EXISTS (SELECT 1 FROM think_alarms m "
            "WHERE m.agent_class = a.agent_class AND m.name = a.name) AS alarm FROM think_agents a "
            "WHERE a.node_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' "
            "AND l.granted AND l.objsubid = 1 AND l.classid::text::bigint = ((a.lock_key >> 32) & 4294967295) "
            "AND l.objid::text::bigint = (a.lock_key & 4294967295)) ORDER BY alarm DESC LIMIT %s", limit)]

    def sizes(self, key: str) -> tuple[int, int, int]:
        """`(image bytes, WAL rows, WAL bytes)` of an agent (for the bench and the docs)."""
        image = self._one("SELECT coalesce(max(octet_length(image)), 0) FROM think_agents WHERE agent_key = %s", key)
        wal = self._one("SELECT count(*), coalesce(sum(octet_length(frames)), 0) FROM think_agent_wal "
                        "WHERE agent_key = %s", key)
        return int(image[0]), int(wal[0]), int(wal[1])

    # ---- alarms (the cluster's alarm index) ------------------------------------------------------

    def set_alarm(self, agent_class: str, name: str, due: float | None, class_path: str | None = None) -> None:
        if self.draining:  # written with `let_go_all`, in one round trip for every agent
            self._deferred[(agent_class, name)] = (due, class_path)
            return
        if due is None:
            self._run("DELETE FROM think_alarms WHERE agent_class = %s AND name = %s", agent_class, name)
        else:
            self._run(_UPSERT_ALARM, agent_class, name, due, class_path)

    def due_alarms(self, now: float) -> list[tuple[str, str, str | None]]:
        return [(str(c), str(n), p) for c, n, p in self._all(
            "SELECT agent_class, name, class_path FROM think_alarms WHERE due <= %s ORDER BY due", now)]

    def earliest_alarm(self) -> float | None:
        value = self._one("SELECT min(due) FROM think_alarms")[0]
        return float(value) if value is not None else None


class ClusterAlarms:
    """The `AlarmIndex` interface over `think_alarms`, for the runtime's alarm loop."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store

    def set(self, agent_class: str, name: str, due: float | None, class_path: str | None = None) -> None:
        self.store.set_alarm(agent_class, name, due, class_path)

    def due(self, now: float) -> list[tuple[str, str, str | None]]:
        return self.store.due_alarms(now)

    def earliest(self) -> float | None:
        return self.store.earliest_alarm()

    def close(self) -> None:
        """The store's session outlives the index (the runtime closes it)."""
