"""Child agents of one parent: where they live, the stub that calls them, and their registry.

A child is an ordinary agent instance of the same runtime with its own database, at the address
`(ChildClass, "<parent-kebab>/<parent-name>/sub/<child-kebab>/<child-name>")`. The parent keeps
a row per child it created (`think_sub_agents`), so the server only routes a browser to children
that exist (`/agents/<parent>/<name>/sub/<child>/<child-name>`), and so the class of a child can
be found again after a restart.
"""

from __future__ import annotations

import inspect
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from think.errors import ConfigurationError
from think.runtime.agent import Agent
from think.runtime.base import AgentElsewhere
from think.runtime.classes import class_path, load_class
from think.runtime.naming import check_agent_name
from think.runtime.remote import on_agent, on_open_agent, public_method
from think.storage import Database, migration
from think.subagents.remote import abort_here, chat_on_child

if TYPE_CHECKING:
    from think.runtime.base import AgentRuntime

log = logging.getLogger("think.subagents")

_CLASSES: dict[str, type[Agent]] = {}
"""Child classes this process has used, by kebab name (found again without an import)."""


@migration("think.subagents.001_children")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_sub_agents (
            agent_class TEXT NOT NULL,          -- the child's kebab-case class name
            name        TEXT NOT NULL,
            class_path  TEXT NOT NULL,          -- module:qualname, to find the class after a restart
            created_at  REAL NOT NULL,
            PRIMARY KEY (agent_class, name)
        )""")


MIGRATIONS = [_m001]


def remember_class(cls: type[Agent]) -> None:
    _CLASSES[cls.kebab_name()] = cls



def child_address(parent: Agent, cls: type[Agent], name: str) -> str:
    return f"{type(parent).kebab_name()}/{parent.name}/sub/{cls.kebab_name()}/{name}"


class SubAgentStub:
    """Calls methods of a child agent: `await stub.some_method(...)` runs on the child.

    Each call holds a lease on the child, so it is not hibernated mid-call. `stub.chat(input,
    callback)` streams the child's turn back through `callback` (see `Think.chat`).
    """

    def __init__(self, runtime: AgentRuntime, cls: type[Agent], name: str, address: str) -> None:
        self._runtime = runtime
        self.agent_class = cls
        self.name = name
        """The child's name under its parent."""
        self.address = address
        """The child's instance name in the runtime."""

    def __repr__(self) -> str:
        return f"SubAgentStub({self.agent_class.__name__}, {self.name!r})"

    async def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run `method(*args, **kwargs)` on the child (awaited if it is a coroutine). A child open
        in another process of a cluster runs it there (`think.runtime.remote`): arguments and
        result then travel as JSON; `chat` streams its callbacks back."""
        if method.startswith("_"):
            raise AttributeError(f"{self.agent_class.__name__}.{method} is private")
        if method == "chat":
            return await chat_on_child(self._runtime, self.agent_class, self.address, *args, **kwargs)

        async def here(child: Agent) -> Any:
            result = public_method(child, method)(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result

        return await on_agent(self._runtime, self.agent_class, self.address, "call",
                              {"method": method, "args": list(args), "kwargs": kwargs}, here)

    def __getattr__(self, method: str) -> Callable[..., Awaitable[Any]]:
        if method.startswith("_"):
            raise AttributeError(method)

        async def invoke(*args: Any, **kwargs: Any) -> Any:
            return await self.call(method, *args, **kwargs)

        invoke.__name__ = method
        return invoke


class SubAgents:
    """The children of one parent agent."""

    def __init__(self, parent: Agent, db: Database) -> None:
        self.parent = parent
        self.db = db
        self.agent_tools_running = 0
        """Child runs as tools in progress (for `max_concurrent_agent_tools`)."""
        self.agent_tool_runs = 0

    def runtime(self) -> AgentRuntime:
        runtime = self.parent.runtime
        if runtime is None:
            raise ConfigurationError("sub-agents need an agent runtime (use open_agent, a runtime or a server)")
        return runtime

    def check(self, cls: Any, name: Any) -> tuple[type[Agent], str]:
        if not (isinstance(cls, type) and issubclass(cls, Agent)):
            raise ConfigurationError(f"sub_agent() needs an Agent subclass, not {cls!r}")
        check_agent_name(name)
        if "/" in name:
            raise ConfigurationError(f"a sub-agent name cannot contain '/': {name!r}")
        address = child_address(self.parent, cls, name)
        check_agent_name(address)
        return cls, address

    async def get(self, cls: type[Agent], name: str) -> SubAgentStub:
        """The child `(cls, name)`, created (and started) if needed."""
        child_cls, address = self.check(cls, name)
        runtime = self.runtime()
        remember_class(child_cls)
        register = getattr(runtime, "register", None)
        if register is not None:
            register(child_cls)
        self.db.sql("INSERT OR IGNORE INTO think_sub_agents (agent_class, name, class_path, created_at) "
                    "VALUES (?, ?, ?, ?)", child_cls.kebab_name(), name,
                    class_path(child_cls), time.time())
        try:
            await runtime.get(child_cls, address)  # start it now: a child that cannot start fails here
        except AgentElsewhere:
            pass  # open in another process of the cluster: calls go there
        return SubAgentStub(runtime, child_cls, name, address)

    def lookup(self, kebab: str, name: str) -> tuple[bool, type[Agent] | None]:
        """Whether the child exists, and its class (None when this process cannot find it)."""
        row = self.db.one("SELECT class_path FROM think_sub_agents WHERE agent_class = ? AND name = ?", kebab, name)
        if row is None:
            return False, None
        return True, _CLASSES.get(kebab) or load_class(row["class_path"])

    def list(self) -> list[tuple[str, str]]:
        """`(kebab class, name)` of every child, oldest first."""
        return [(r["agent_class"], r["name"]) for r in
                self.db.sql("SELECT agent_class, name FROM think_sub_agents ORDER BY created_at")]

    def _live(self, cls: type[Agent], address: str) -> Agent | None:
        live = getattr(self.runtime(), "live", None)
        for agent in live() if live is not None else ():
            if type(agent) is cls and agent.name == address:
                return agent
        return None

    async def abort(self, cls: type[Agent], name: str, reason: str | None = None) -> int:
        """Cancel the child's running turns and submissions where it is open (here, or in the
        process of a cluster that has it open); how many turns were cancelled."""
        cls, address = self.check(cls, name)
        why = reason or "The parent aborted the sub-agent"
        cancelled = await on_open_agent(self.runtime(), cls, address, "sub_agent.abort", {"reason": why},
                                        here=lambda child: abort_here(child, why))
        log.info("aborted sub-agent %s %r of %s (%s)", cls.__name__, name, self.parent.name, reason or "no reason")
        return int(cancelled or 0)

    async def delete(self, cls: type[Agent], name: str, *, grace: float = 10.0) -> bool:
        """Abort the child, close it where it is open, then delete it and its database (and only
        then the parent's record of it); False if there was no such child."""
        cls, address = self.check(cls, name)
        known = self.db.value("SELECT 1 FROM think_sub_agents WHERE agent_class = ? AND name = ?",
                              cls.kebab_name(), name) is not None
        await self.abort(cls, name, "deleted")
        runtime = self.runtime()
        owner_of = getattr(runtime, "owner_of", None)

        async def hibernate_here(child: Agent) -> bool:
            return await runtime.hibernate(cls, address)

        with anyio.move_on_after(grace):  # its cancelled turns end within a chunk
            while True:
                closed = await on_open_agent(runtime, cls, address, "sub_agent.close", {}, here=hibernate_here)
                if closed is None and (owner_of is None or owner_of(cls, address) is None):
                    break
                await anyio.sleep(0.02)
        if self._live(cls, address) is not None or (owner_of is not None and owner_of(cls, address) is not None):
            raise ConfigurationError(f"sub-agent {cls.__name__} {name!r} is still in use; close its connections "
                                     "and try again")
        remove = getattr(runtime, "remove", None)
        if remove is not None and not remove(cls, address):
            raise ConfigurationError(f"sub-agent {cls.__name__} {name!r} was opened again meanwhile; try again")
        path_for = getattr(runtime, "path_for", None)
        if path_for is not None:
            path = path_for(cls, address)
            for suffix in ("", "-wal", "-shm"):
                await anyio.Path(f"{path}{suffix}").unlink(missing_ok=True)
        set_alarm = getattr(runtime, "set_alarm", None)
        if set_alarm is not None:
            set_alarm(cls, address, None)
        self.db.sql("DELETE FROM think_sub_agents WHERE agent_class = ? AND name = ?", cls.kebab_name(), name)
        return known

