"""A brand-new agent's start skips looking for work to restore; every later start looks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import think.runtime.embedded as embedded
from think import EmbeddedRuntime, Think
from think.storage import Database, migration

# Tables the start-up recovery reads (stored MCP servers and extensions, interrupted streams and
# fibers, parked actions and executions, submissions left running).
RECOVERY_TABLES = ("think_mcp_servers", "think_extensions", "think_streams", "think_chat_fibers",
                   "think_executions", "think_action_approvals", "think_submissions")


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    class Traced(Database):
        def __init__(self, path: str | Path) -> None:
            super().__init__(path)
            self.connection.set_trace_callback(seen.append)

    monkeypatch.setattr(embedded, "Database", Traced)
    return seen


def recovery_reads(seen: list[str]) -> set[str]:
    return {table for table in RECOVERY_TABLES for sql in seen if table in sql}


async def test_a_new_agent_starts_without_recovery_reads_and_a_restarted_one_reads(
        tmp_path: Path, statements: list[str]) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Think, "a")
    assert recovery_reads(statements) == set()
    agent.kv_set("x", 1)
    await runtime.close()
    statements.clear()
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    await runtime.get(Think, "a")  # the same database again: what a dead process left is restored
    assert recovery_reads(statements) == set(RECOVERY_TABLES)
    await runtime.close()


@migration("seeded.001")
def _seed(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE seeded (a TEXT)")


class WithOwnMigration(Think):
    migrations = (_seed,)


async def test_a_new_agent_whose_own_migrations_ran_still_looks(tmp_path: Path, statements: list[str]) -> None:
    # An agent's own migration may write anything, so its new database is not known to be blank.
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    await runtime.get(WithOwnMigration, "a")
    assert recovery_reads(statements) == set(RECOVERY_TABLES)
    await runtime.close()
