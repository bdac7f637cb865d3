"""The cluster runtime in one test process: two runtimes (two Postgres sessions, two "nodes")
over one real PostgreSQL. One has an agent open at a time; what one committed, the other sees,
also when the first one's session dies without closing anything (what a `kill -9` leaves)."""

from __future__ import annotations

import sqlite3
from typing import ClassVar

import anyio
import psycopg
import pytest

from tests.submissions.server_process import eventually
from think import Agent
from think.cluster.runtime import ClusterRuntime
from think.runtime.base import AgentElsewhere
from think.storage import migration


@migration("notes.001")
def _notes(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")


class Notes(Agent):
    initial_state: ClassVar[dict[str, int]] = {"count": 0}
    migrations = (_notes,)

    def add(self, body: str) -> None:
        self.sql("INSERT INTO notes (body) VALUES (?)", body)

    def bodies(self) -> list[str]:
        return [row["body"] for row in self.sql("SELECT body FROM notes ORDER BY id")]


class Ticker(Notes):
    agent_class_name = "ticker"

    async def tick(self, payload: str) -> None:
        self.add(f"tick {payload}")


def _node(database: str, name: str) -> ClusterRuntime:
    return ClusterRuntime(database, node_id=name, node_url=f"http://{name}.invalid", idle_timeout=None)


async def test_one_node_has_an_agent_open_and_the_next_one_sees_its_data(database: str) -> None:
    a, b = _node(database, "a"), _node(database, "b")
    try:
        agent = await a.get(Notes, "n1")
        agent.add("first")
        await agent.set_state({"count": 1})
        with pytest.raises(AgentElsewhere) as elsewhere:
            await b.get(Notes, "n1")
        assert elsewhere.value.url == "http://a.invalid"
        other = await b.get(Notes, "n2")  # other agents open anywhere
        assert other.bodies() == []
        assert await a.hibernate(Notes, "n1")
        again = await b.get(Notes, "n1")
        assert again.bodies() == ["first"] and again.state == {"count": 1}
        again.add("second")
        assert await b.hibernate(Notes, "n1")
        back = await a.get(Notes, "n1")
        assert back.bodies() == ["first", "second"]
    finally:
        await a.close()
        await b.close()


async def test_a_node_whose_session_dies_leaves_every_commit_and_an_orphan(database: str) -> None:
    a, b = _node(database, "a"), _node(database, "b")
    try:
        agent = await a.get(Notes, "n1")
        for k in range(50):
            agent.add(f"note {k}")
        with agent.db.transaction():
            agent.add("in a transaction")
            agent.add("committed together")
        ticker = await a.get(Ticker, "busy")
        ticker.schedule(3600, "tick", "later")  # unfinished work: an alarm
        a.store._conn.close()  # the session ends as at a kill -9: no checkpoint, no unlock
        await eventually(lambda: len(b.store.orphans()) == 2)  # once Postgres has ended that session
        assert sorted((o.name, o.alarm) for o in b.store.orphans()) == [("busy", True), ("n1", False)]
        b.register(Notes, Ticker)
        assert await b.wake_orphans() == 1  # only the one with an alarm is opened (its recovery runs) ...
        assert [live.name for live in b.live()] == ["busy"]
        assert b.store.orphans() == []  # ... the other is only marked closed
        taken = await b.get(Notes, "n1")
        assert taken.bodies() == [f"note {k}" for k in range(50)] + ["in a transaction", "committed together"]
    finally:
        await b.close()
        a._store = None
        await a.close()


async def test_a_schedule_fires_on_another_node_after_the_node_that_set_it_died(database: str) -> None:
    a, b = _node(database, "a"), _node(database, "b")
    try:
        agent = await a.get(Ticker, "t")
        agent.schedule(60, "tick", "later")
        due = agent.schedules.next_due()
        assert due is not None and b.alarms.earliest() == due  # the alarm index is the cluster's
        assert await b.fire_due_alarms(now=due) == 0  # open on a, which fires its own alarms
        a.store._conn.close()  # a dies with the schedule pending
        await eventually(lambda: [o.name for o in b.store.orphans()] == ["t"])  # its session has ended
        b.register(Ticker)
        assert await b.fire_due_alarms(now=due + 1) == 1
        assert (await b.get(Ticker, "t")).bodies() == ["tick later"]
        assert b.alarms.earliest() is None
    finally:
        await b.close()
        a._store = None
        await a.close()


async def test_an_agent_changing_hands_is_waited_for(database: str) -> None:
    """Its lock is held by a session that has not recorded itself as the owner yet (the instant
    between a process's lock and its row): `get` waits, then opens it once the lock is free."""
    from think.cluster.store import lock_key

    b = _node(database, "b")
    holder = await psycopg.AsyncConnection.connect(database, autocommit=True)
    try:
        await holder.execute("SELECT pg_advisory_lock(%s)", (lock_key("notes/h"),))
        b.store  # noqa: B018 - connect before the race

        async def let_go() -> None:
            await anyio.sleep(0.3)
            await holder.execute("SELECT pg_advisory_unlock(%s)", (lock_key("notes/h"),))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(let_go)
            agent = await b.get(Notes, "h")
        assert agent.bodies() == []
    finally:
        await holder.close()
        await b.close()
