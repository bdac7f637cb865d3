"""The cluster runtime in one test process: two runtimes (two Postgres sessions, two "nodes")
over one real PostgreSQL. One has an agent open at a time; what one committed, the other sees,
also when the first one's session dies without closing anything (what a `kill -9` leaves)."""

from __future__ import annotations

import sqlite3
from typing import ClassVar

import pytest

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
        a.store._conn.close()  # the session ends as at a kill -9: no checkpoint, no unlock
        assert [name for _, name, _ in b.store.orphans()] == ["n1"]
        b.register(Notes)
        assert await b.wake_orphans() == 1
        taken = await b.get(Notes, "n1")
        assert taken.bodies() == [f"note {k}" for k in range(50)] + ["in a transaction", "committed together"]
        assert b.store.orphans() == []
    finally:
        await b.close()
        a._store = None
        await a.close()
