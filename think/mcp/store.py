"""The agent's MCP servers as rows of its own SQLite database (`think_mcp_servers`).

A row is what `add_mcp_server` was given: how to reach the server (a URL and transport with
headers, or a command line for stdio), and the tools it listed when it was last ready (so a
call of one of them, cut off by a crash, is known as a server tool's call before the server is
connected again). Connection state is never stored; it is rebuilt by connecting again when the
agent starts. Headers are kept as given (they often carry a token), and so are a server's OAuth
client registration and tokens (`think_mcp_oauth`, see `think.mcp.oauth`): they stay in the
agent's database and are never sent to clients.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from typing import Literal

import orjson

from think.storage import Database, migration

Transport = Literal["auto", "streamable-http", "sse", "stdio"]
TRANSPORTS: tuple[Transport, ...] = ("auto", "streamable-http", "sse", "stdio")


@migration("think.mcp.001_servers")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_mcp_servers (
            id         TEXT PRIMARY KEY,
            name       TEXT NOT NULL,
            transport  TEXT NOT NULL,
            url        TEXT,
            headers    BLOB,               -- JSON object, for URL transports
            command    TEXT,
            args       BLOB,               -- JSON array, for stdio
            env        BLOB,               -- JSON object, for stdio
            cwd        TEXT,
            created_at REAL NOT NULL
        )""")


@migration("think.mcp.002_tool_cache")
def _m002(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE think_mcp_servers ADD COLUMN tools BLOB")  # JSON: the last tools/list


@migration("think.mcp.003_oauth")
def _m003(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE think_mcp_servers ADD COLUMN callback_url TEXT")  # the OAuth redirect URI
    conn.execute("""
        CREATE TABLE think_mcp_oauth (
            server_id   TEXT PRIMARY KEY REFERENCES think_mcp_servers(id) ON DELETE CASCADE,
            client_info BLOB,              -- JSON: the dynamic client registration
            tokens      BLOB,              -- JSON: the SDK's OAuthToken
            expires_at  REAL               -- when the access token expires (epoch seconds)
        )""")


MIGRATIONS = [_m001, _m002, _m003]


@dataclass(frozen=True)
class ServerSpec:
    """How to reach one MCP server."""

    id: str
    name: str
    transport: Transport
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    cwd: str | None = None
    callback_url: str | None = None
    """Where the server's OAuth authorization server sends the user back (`…/callback` under the
    agent's URL); None: the agent was added outside a request and without `callback_host`."""

    @property
    def server_url(self) -> str:
        """The URL clients are shown: the URL, or `stdio:` and the command line."""
        if self.url is not None:
            return self.url
        return "stdio:" + " ".join((self.command or "", *self.args))


def _json(value: object) -> bytes | None:
    return None if value is None else orjson.dumps(value)


class ServerStore:
    """Rows of `think_mcp_servers`, oldest first."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def all(self) -> list[ServerSpec]:
        rows = self.db.sql("SELECT * FROM think_mcp_servers ORDER BY created_at, id")
        return [ServerSpec(id=r["id"], name=r["name"], transport=r["transport"], url=r["url"],
                           headers=orjson.loads(r["headers"]) if r["headers"] else {},
                           command=r["command"], args=tuple(orjson.loads(r["args"]) if r["args"] else ()),
                           env=orjson.loads(r["env"]) if r["env"] else None, cwd=r["cwd"],
                           callback_url=r["callback_url"]) for r in rows]

    def add(self, spec: ServerSpec) -> None:
        self.db.sql("INSERT INTO think_mcp_servers (id, name, transport, url, headers, command, args, env, cwd, "
                    "created_at, callback_url) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", spec.id, spec.name,
                    spec.transport, spec.url, _json(spec.headers or None), spec.command, _json(list(spec.args) or None),
                    _json(spec.env), spec.cwd, time.time(), spec.callback_url)

    def cached_tools(self, server_id: str) -> list[dict[str, object]]:
        """The tools the server listed when it was last ready (as the SDK dumps them)."""
        raw = self.db.value("SELECT tools FROM think_mcp_servers WHERE id = ?", server_id)
        return list(orjson.loads(raw)) if raw else []

    def cache_tools(self, server_id: str, tools: list[dict[str, object]]) -> None:
        self.db.sql("UPDATE think_mcp_servers SET tools = ? WHERE id = ?", orjson.dumps(tools), server_id)

    def remove(self, server_id: str) -> bool:
        found = self.db.value("SELECT 1 FROM think_mcp_servers WHERE id = ?", server_id) is not None
        self.db.sql("DELETE FROM think_mcp_oauth WHERE server_id = ?", server_id)
        self.db.sql("DELETE FROM think_mcp_servers WHERE id = ?", server_id)
        return found
