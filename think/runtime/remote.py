"""Doing something with an agent wherever it is open: here, or in the process of a cluster that
has it open.

    result = await on_agent(runtime, Child, name, "call", {"method": "add", "args": [1]},
                            here=lambda child: child.add(1))

`here(agent)` runs when this process can lease the agent (always, on the embedded runtime). When
another process has it open (`AgentElsewhere`), the runtime's `call_owner` sends the operation
`op` with its JSON `payload` there (`think.cluster.peers`), where the peer op of that name runs on
the agent; what it emits (`emit(json)`) arrives at `on_event`, its JSON result is returned, and
an exception it raised is raised here as `RemoteCallFailed`. An agent that moved on between the
lease and the call is looked for again.

`on_open_agent` does the same only where the agent is open already (None when it is open
nowhere, so nothing is opened for it): what acts on a running agent (aborting a child's turn)
uses it.

Ops are registered by name with `@peer_op(name)`; `call` (a public method, with JSON arguments)
is here, sub-agent turns and the MCP chat tool register their own. What crosses the wire is JSON:
arguments and results that are not JSON fail with a `TypeError` naming them.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import anyio

from think.errors import StorageError
from think.runtime.agent import Agent
from think.runtime.base import AgentElsewhere, AgentRuntime
from think.runtime.classes import class_path

T = TypeVar("T")
Emit = Callable[[Any], Awaitable[None]]
PeerOp = Callable[[Agent, dict[str, Any], Emit], Awaitable[Any]]

PEER_OPS: dict[str, PeerOp] = {}
"""The operations another process may run on an agent open here, by name."""

MOVES = 20
"""How many times an agent that moved on between the lease and the call is looked for again."""


class RemoteCallFailed(RuntimeError):
    """The operation raised in the agent's process: `type_name` is its exception's class name."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name


class AgentMoved(StorageError):
    """The process asked no longer has the agent open (it changed hands meanwhile)."""


def peer_op(name: str) -> Callable[[PeerOp], PeerOp]:
    def register(op: PeerOp) -> PeerOp:
        PEER_OPS[name] = op
        return op

    return register


async def on_agent(runtime: AgentRuntime, cls: type[Agent], name: str, op: str, payload: dict[str, Any],
                   here: Callable[[Any], Awaitable[T]], on_event: Emit | None = None) -> T | Any:
    """`here(agent)` on the agent leased in this process, or the peer op `op` in the process that
    has it open (see the module docstring)."""
    for _ in range(MOVES):
        async with AsyncExitStack() as stack:
            try:
                agent = await stack.enter_async_context(runtime.lease(cls, name))
            except AgentElsewhere as elsewhere:
                owner = elsewhere
            else:
                return await here(agent)
        call_owner = getattr(runtime, "call_owner", None)
        if call_owner is None:
            raise owner
        request = {"op": op, "class": cls.kebab_name(), "class_path": class_path(cls), "name": name,
                   "payload": payload}
        try:
            return await call_owner(owner.url, request, on_event)
        except AgentMoved:
            await anyio.sleep(0.05)
    raise StorageError(f"{cls.kebab_name()}/{name} kept changing hands; try again")


async def on_open_agent(runtime: AgentRuntime, cls: type[Agent], name: str, op: str, payload: dict[str, Any],
                        here: Callable[[Any], Awaitable[T]]) -> T | Any | None:
    """`here(agent)` if the agent is open in this process, the peer op `op` in the process that
    has it open, or None when no process has it open."""
    for _ in range(MOVES):
        live = getattr(runtime, "live", None)
        agent = next((a for a in (live() if live is not None else ()) if type(a) is cls and a.name == name), None)
        if agent is not None:
            return await here(agent)
        owner_of = getattr(runtime, "owner_of", None)
        url = owner_of(cls, name) if owner_of is not None else None
        if url is None:
            return None
        request = {"op": op, "class": cls.kebab_name(), "class_path": class_path(cls), "name": name,
                   "payload": payload}
        try:
            return await runtime.call_owner(url, request, None)  # type: ignore[attr-defined]
        except AgentMoved:
            await anyio.sleep(0.05)
    raise StorageError(f"{cls.kebab_name()}/{name} kept changing hands; try again")


async def run_peer_op(agent: Agent, op: str, payload: dict[str, Any], emit: Emit) -> Any:
    """Run the registered op `op` on `agent` (in the process that has it open)."""
    handler = PEER_OPS.get(op)
    if handler is None:
        raise LookupError(f"no operation {op!r} here (does every process serve the same app?)")
    return await handler(agent, payload, emit)


def public_method(agent: Agent, method: str) -> Callable[..., Any]:
    """`agent.method`, refused when private or not a method (as `SubAgentStub.call` refuses it)."""
    if method.startswith("_"):
        raise AttributeError(f"{type(agent).__name__}.{method} is private")
    target = getattr(agent, method, None)
    if target is None or not callable(target):
        raise AttributeError(f"{type(agent).__name__} has no method {method!r}")
    return target  # type: ignore[no-any-return]


@peer_op("call")
async def _call(agent: Agent, payload: dict[str, Any], emit: Emit) -> Any:
    result = public_method(agent, str(payload["method"]))(*payload.get("args", ()), **payload.get("kwargs", {}))
    if inspect.isawaitable(result):
        result = await result
    return result
