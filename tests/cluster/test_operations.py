"""Operating a cluster: `think db migrate`, `create_app(database=…)` and its health endpoint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.cluster.nodes import HEALTH, cluster, owner
from tests.submissions.server_process import ROOT, think_serve_process
from think import ConfigurationError
from think.client import AgentClient
from think.cluster.store import MIGRATIONS
from think.server import create_app
from think.testing import ScriptedModel

TARGET = "tests.recovery.crash_agents:Crashy"


def _migrate(database: str) -> str:
    done = subprocess.run([sys.executable, "-m", "think.cli", "db", "migrate", "--database", database],
                          cwd=ROOT, capture_output=True, text=True, check=True, env={"PYTHONPATH": str(ROOT),
                                                                                      "PATH": "/usr/bin:/bin"})
    return done.stdout.strip()


def test_think_db_migrate_creates_the_tables_once(database: str) -> None:
    assert _migrate(database).splitlines() == [f"applied {name}" for name, _ in MIGRATIONS]
    assert _migrate(database) == "the cluster database is up to date"
    with psycopg.connect(database) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert {"think_nodes", "think_agents", "think_agent_wal", "think_alarms", "think_schema"} <= tables


def test_think_db_migrate_says_what_is_wrong_with_an_unreachable_database() -> None:
    done = subprocess.run([sys.executable, "-m", "think.cli", "db", "migrate", "--database",
                           "postgresql://nobody@127.0.0.1:9/none"], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0 and "cannot connect to the cluster database" in done.stderr


def test_create_app_takes_a_database_or_a_data_dir_not_both(tmp_path: Path) -> None:
    from think import Think

    class Chat(Think):
        def get_model(self) -> ScriptedModel:
            return ScriptedModel(["hi"])

    with pytest.raises(ConfigurationError, match="not two of them"):
        create_app([Chat], data_dir=tmp_path, database="postgresql://x@127.0.0.1/x")
    with pytest.raises(ConfigurationError, match="postgresql://"):
        create_app([Chat], database="sqlite:///x.db")
    with pytest.raises(ConfigurationError, match="browse"):
        create_app([Chat], database="postgresql://x@127.0.0.1/x", browse=True)


def test_each_process_answers_its_health_check(database: str, tmp_path: Path) -> None:
    env = {"THINK_NODE_ID": "solo"}
    with think_serve_process([TARGET, "--database", database], env, ready_path=HEALTH) as server:
        answer = httpx.get(server.http + HEALTH, timeout=5)
        assert answer.status_code == 200 and answer.json() == {"ok": True, "node": "solo"}
        assert httpx.get(server.http + "/agents/crashy/x/get-messages", timeout=5).json() == []
        with psycopg.connect(database) as conn:
            assert conn.execute("SELECT node_id, url FROM think_nodes").fetchall() == [("solo", server.http)]


async def test_other_protocols_reach_an_agent_open_in_another_process(database: str) -> None:
    with cluster([TARGET, "--protocols", "cf_agent,ai-sdk"], database, {}, size=2) as (a, b):
        async with AgentClient.connect(f"{a.ws}/agents/crashy/p", call_timeout=10):
            assert owner(database, "crashy/p") == "n0"
            async with httpx.AsyncClient(timeout=10) as http:
                answer = await http.get(f"{b.http}/agents/crashy/p/chat")  # the AI SDK transport's GET
                assert answer.status_code == 200 and answer.json() == []
                forwarded = await http.get(f"{b.http}/agents/crashy/p/get-messages")
                assert forwarded.status_code == 200 and forwarded.json() == []
