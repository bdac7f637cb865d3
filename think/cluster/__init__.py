"""Serving agents from N processes over one PostgreSQL: the cluster runtime.

    app = create_app([Assistant], database="postgresql://…")     # or THINK_DATABASE_URL
    think serve app:Assistant --database postgresql://… --port 8001

What it trusts: the database (every process of the cluster may open every agent in it) and the
other processes' URLs recorded there (a request for an agent another process has open is
forwarded to that URL as the client sent it; the owner decides everything, as it would alone).
See `runtime.py` for the design, `shipped.py` for how an agent's database lives in Postgres.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from think.errors import ConfigurationError

if TYPE_CHECKING:
    from think.cluster.runtime import ClusterRuntime


def cluster_runtime(database: str, *, idle_timeout: float | None = 60.0, node_url: str | None = None,
                    node_id: str | None = None) -> ClusterRuntime:
    """The runtime of one process of a cluster over `database` (a `postgresql://` URL).
    `node_url`: how the other processes reach this one (default `THINK_NODE_URL`)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise ConfigurationError("the cluster runtime needs psycopg: pip install 'think-agents[cluster]'") from None
    from think.cluster.runtime import ClusterRuntime

    return ClusterRuntime(database, idle_timeout=idle_timeout, node_url=node_url, node_id=node_id)


__all__ = ["cluster_runtime"]
