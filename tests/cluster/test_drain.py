"""A drain (the process shuts down with many agents open) costs a fixed number of round trips
to Postgres, not one or two per agent, and loses nothing: the commits the agents make while
closing (a turn's keep-alive schedule cancelled) and their alarm changes reach Postgres in the
one transaction that lets them all go."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from think import Think
from think.cluster.runtime import ClusterRuntime
from think.testing import ScriptedModel

AGENTS = 20


class Chatty(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: "hello back")


def _node(database: str, name: str, tmp: Any) -> ClusterRuntime:
    runtime = ClusterRuntime(database, node_id=name, node_url=f"http://{name}.invalid", idle_timeout=None,
                             cache_dir=tmp / name)
    runtime.register(Chatty)
    return runtime


def _alarms(database: str) -> int:
    with psycopg.connect(database) as conn:
        row = conn.execute("SELECT count(*) FROM think_alarms").fetchone()
    return int(row[0]) if row else 0


async def test_a_drain_costs_the_same_few_round_trips_for_any_number_of_agents(database: str, tmp_path: Any,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    a = _node(database, "a", tmp_path)
    for k in range(AGENTS):
        agent = await a.get(Chatty, f"c{k}")
        result = await agent.chat("hi")
        assert result.status == "completed"
    assert _alarms(database) == AGENTS  # each turn armed its keep-alive alarm
    statements: list[str] = []
    conn = a.store._conn
    plain = conn.execute

    def counted(query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append(str(query))
        return plain(query, *args, **kwargs)

    monkeypatch.setattr(conn, "execute", counted)
    a.drain()
    await a.close()
    # the let-go transaction's few statements (begin/commit are not counted), whatever AGENTS is
    assert len(statements) <= 4, statements
    assert _alarms(database) == 0  # every keep-alive cancelled on the way out reached Postgres
    b = _node(database, "b", tmp_path)
    try:
        again = await b.get(Chatty, "c7")
        assert [m.text for m in again.messages] == ["hi", "hello back"]
        assert not any(task.id == "think:chat-recovery" for task in again.get_schedules())  # the drain's commit
    finally:
        await b.close()


async def test_a_drain_costs_each_agent_only_its_closing_commit(database: str, tmp_path: Any) -> None:
    """Per agent, a drain runs the few SQLite statements of its closing commit (the keep-alive
    schedule cancelled) and removes no file one by one (the cache directory goes at the end)."""
    a = _node(database, "a", tmp_path)
    agents = [await a.get(Chatty, f"s{k}") for k in range(3)]
    for agent in agents:
        assert (await agent.chat("hi")).status == "completed"
    statements: list[str] = []
    for agent in agents:
        agent.db._conn.set_trace_callback(statements.append)
    a.drain()
    await a.close()
    writes = [s for s in statements if s.lstrip().upper().startswith(("DELETE", "INSERT", "UPDATE"))]
    assert len(writes) == len(agents), writes  # one DELETE of the keep-alive schedule each
    # per agent: is a fiber left? the DELETE (which tells whether it existed), the next alarm
    assert len(statements) <= 3 * len(agents), statements
    assert not (tmp_path / "a").exists()
