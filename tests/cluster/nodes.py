"""Real `think serve --database` processes for the cluster tests, and what they left in Postgres."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import psycopg

from tests.submissions.server_process import ServerProcess, spawn_think_serve

HEALTH = "/_think/health"


@contextmanager
def cluster(targets: list[str], database: str, env: dict[str, str], *, size: int = 3) -> Iterator[list[ServerProcess]]:
    """`size` real `think serve` processes over `database`, node ids `n0`, `n1`, …"""
    with ExitStack() as stack:
        nodes = []
        for k in range(size):
            node = spawn_think_serve([*targets, "--database", database], {**env, "THINK_NODE_ID": f"n{k}"})
            stack.callback(node.stop)
            nodes.append(node)
        for node in nodes:
            node.wait_ready(HEALTH)
        yield nodes


def owner(database: str, key: str) -> str | None:
    """The node id that has the agent `key` (`class/name`) open, as Postgres records it."""
    with psycopg.connect(database, autocommit=True) as conn:
        row = conn.execute("SELECT node_id FROM think_agents WHERE agent_key = %s", (key,)).fetchone()
    return None if row is None else row[0]
