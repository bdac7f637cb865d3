"""Runtime-generic tests: a test that takes the `make_runtime` fixture runs once per runtime,
embedded (SQLite files) and cluster (a real PostgreSQL, `tests/cluster/postgres.py`).

    pytest --runtime=embedded      # only the embedded runtime (no PostgreSQL needed)
    pytest --runtime=cluster       # only the cluster runtime
    pytest                         # both (the default)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tests.cluster.postgres import postgres_server
from think.runtime.embedded import EmbeddedRuntime

RUNTIMES = ("embedded", "cluster")
MakeRuntime = Callable[..., EmbeddedRuntime]


def add_option(parser: pytest.Parser) -> None:
    parser.addoption("--runtime", choices=[*RUNTIMES, "both"], default="both",
                     help="the runtimes the runtime-generic tests (those taking make_runtime) run on")


def parametrize(metafunc: pytest.Metafunc) -> None:
    if "runtime_kind" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("--runtime")
        metafunc.parametrize("runtime_kind", RUNTIMES if chosen == "both" else [chosen])


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """One real PostgreSQL server for the test session (started on first use)."""
    with postgres_server() as url:
        yield url


@pytest.fixture
def database(postgres: str) -> Iterator[str]:
    """A fresh, empty database on the session's server, for one test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield postgres.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def make_runtime(runtime_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[MakeRuntime]:
    """`make_runtime(idle_timeout=None)`: a new runtime of the kind under test; each cluster
    runtime is another node (its own Postgres session) over the test's database."""
    url = request.getfixturevalue("database") if runtime_kind == "cluster" else None
    made: list[EmbeddedRuntime] = []

    def make(*, idle_timeout: float | None = None) -> EmbeddedRuntime:
        runtime: EmbeddedRuntime
        if url is None:
            runtime = EmbeddedRuntime(tmp_path / "data", idle_timeout=idle_timeout)
        else:
            from think.cluster.runtime import ClusterRuntime

            runtime = ClusterRuntime(url, node_id=f"test-{len(made)}", node_url=f"http://node-{len(made)}.invalid",
                                     idle_timeout=idle_timeout, cache_dir=tmp_path / f"node-{len(made)}")
        made.append(runtime)
        return runtime

    yield make
    import anyio

    async def close_all() -> None:
        for runtime in made:
            await runtime.close()

    anyio.run(close_all)
