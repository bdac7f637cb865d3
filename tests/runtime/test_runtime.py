"""The runtime (both runtimes where a test takes `make_runtime`): addressing, one live instance
per address, hibernation, state, SQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import ClassVar

import anyio
import pytest

from tests.runtimes import MakeRuntime
from think import Agent, ConfigurationError, EmbeddedRuntime, StorageError, open_agent
from think.runtime.naming import file_name, kebab_case
from think.storage import migration


@pytest.mark.parametrize(("name", "kebab"), [
    ("MyAgent", "my-agent"), ("ChatAgentV2", "chat-agent-v2"), ("MY_AGENT", "my-agent"),
    ("my_agent", "my-agent"), ("HTTPServer", "h-t-t-p-server"), ("Assistant", "assistant"),
])
def test_kebab_case_matches_the_js_client(name: str, kebab: str) -> None:
    assert kebab_case(name) == kebab


def test_instance_names_become_safe_unique_file_names() -> None:
    assert file_name("room-1") == "room-1"
    assert "/" not in file_name("../../etc/passwd") and not file_name("..").startswith(".")
    assert file_name("a" * 300) != file_name("a" * 299) and len(file_name("a" * 300)) < 130


@migration("notes.001")
def _notes(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")


class Notes(Agent):
    initial_state: ClassVar[dict[str, int]] = {"count": 0}
    migrations = (_notes,)
    started = 0

    async def on_start(self) -> None:
        type(self).started += 1


async def test_one_live_instance_per_address_even_when_asked_concurrently(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(idle_timeout=None)
    Notes.started = 0
    got: list[Agent] = []
    async with anyio.create_task_group() as tg:
        for _ in range(5):
            async def get() -> None:
                got.append(await runtime.get(Notes, "a"))

            tg.start_soon(get)
    assert len({id(a) for a in got}) == 1 and Notes.started == 1
    assert await runtime.get(Notes, "b") is not got[0]
    await runtime.close()


async def test_sql_state_and_migrations_persist_across_hibernation(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(idle_timeout=None)
    agent = await runtime.get(Notes, "n")
    agent.sql("INSERT INTO notes (body) VALUES (?)", "first")
    seen: list[object] = []

    async def listener(state: object, source: str | None) -> None:
        seen.append(state)

    agent._state_listeners.append(listener)
    assert agent.state == {"count": 0}
    await agent.set_state({"count": 1})
    assert seen == [{"count": 1}]
    assert await runtime.hibernate(Notes, "n")
    assert runtime.live() == []
    again = await runtime.get(Notes, "n")
    assert again is not agent
    assert again.sql("SELECT body FROM notes") == [{"body": "first"}]
    assert again.state == {"count": 1}
    applied = again.sql("SELECT name FROM _think_migrations WHERE name = 'notes.001'")
    assert [r["name"] for r in applied] == ["notes.001"]
    with pytest.raises(TypeError):
        await again.set_state({"not": object()})
    with pytest.raises(StorageError):
        again.sql("SELECT * FROM no_such_table")
    await runtime.close()


async def test_leased_and_busy_instances_are_not_hibernated(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(idle_timeout=0)
    async with runtime.lease(Notes, "x") as agent:
        assert not await runtime.hibernate(Notes, "x")
        assert runtime.live() == [agent]
    assert runtime.live() == []  # idle_timeout=0: hibernated as soon as the lease ended


async def test_idle_instances_are_swept(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(idle_timeout=0.01)
    await runtime.get(Notes, "a")
    await runtime.get(Notes, "b")
    await anyio.sleep(0.02)
    assert await runtime.hibernate_idle() == 2
    assert runtime.live() == []


@pytest.mark.parametrize("name", ["", "x" * 257, "bad\x00name"])
async def test_bad_instance_names_are_refused(make_runtime: MakeRuntime, name: str) -> None:
    with pytest.raises(ConfigurationError):
        await make_runtime().get(Notes, name)


async def test_open_agent_returns_the_same_live_instance_while_held(tmp_path: Path) -> None:
    async with open_agent(Notes, "same", data_dir=tmp_path) as a, open_agent(Notes, "same", data_dir=tmp_path) as b:
        assert a is b
    assert (tmp_path / "notes" / "same.db").exists()


async def test_a_failing_migration_is_a_storage_error_and_nothing_half_applied(tmp_path: Path) -> None:
    @migration("broken.001")
    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE ok_table (x)")
        conn.execute("THIS IS NOT SQL")

    class Broken(Agent):
        migrations = (broken,)

    with pytest.raises(StorageError, match=r"broken\.001"):
        await EmbeddedRuntime(tmp_path).get(Broken, "b")
    # A new database's migrations are all or nothing: the framework's schema (from the image, see
    # think.storage.template) went with the failed one, and no file is left behind.
    assert list((tmp_path / "broken").iterdir()) == []


async def test_a_failing_migration_on_an_existing_database_rolls_back_only_itself(tmp_path: Path) -> None:
    ok = EmbeddedRuntime(tmp_path)
    await ok.get(Notes, "n")
    await ok.close()

    @migration("broken.002")
    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE ok_table (x)")
        conn.execute("THIS IS NOT SQL")

    class Later(Notes):
        migrations = (_notes, broken)
        agent_class_name = "notes"

    with pytest.raises(StorageError, match=r"broken\.002"):
        await EmbeddedRuntime(tmp_path).get(Later, "n")
    conn = sqlite3.connect(tmp_path / "notes" / "n.db")
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'ok_table'").fetchall() == []
    assert conn.execute("SELECT count(*) FROM _think_migrations WHERE name = 'notes.001'").fetchone() == (1,)
    assert conn.execute("SELECT count(*) FROM _think_migrations WHERE name = 'broken.002'").fetchone() == (0,)
