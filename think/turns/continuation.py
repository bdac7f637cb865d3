"""Auto-continuation: after tool results and approvals, a turn that carries the answer on.

A result or approval sent with `autoContinue` asks for a continuation turn (no new user message;
`continuation: true` on its frames). The request is coalesced: a continuation is created once
(a server-generated request id, owned by the connection that asked), and each further request
re-arms a `COALESCE` window. When the window has passed, the continuation starts as soon as
nothing streams, no answer is being applied and the last assistant message is not in the middle
of a batch (some of its calls answered, others still waiting); until then it waits, with no
time limit. A request that arrives while a continuation runs is deferred: it becomes pending when
that one ends.

A continuation reuses what the last chat request carried: the client tools it registered and
its custom body (`remember_request`), kept in the agent's key-value store across restarts. A
session other than the root session (a harness session) keeps its own client tools, from the
last submission that registered some; an answer there runs its continuation at once
(`continue_session`), not through the coalescing controller, which serves the chat transcript.

In a served agent the wait runs in the server's task group (`attach`); elsewhere a Python caller
that completes a batch runs the continuation itself (`run_if_ready`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from think.errors import ConfigurationError, ProtocolError
from think.messages import JSONObject, Message
from think.tools.tool import Tool, client_tool
from think.turns.tool_results import mid_batch
from think.turns.trust import ToolKinds, split_client_tools, tool_kinds
from think.turns.turn import TurnRequest, TurnResult

if TYPE_CHECKING:
    from think.agent import Think
    from think.protocol.frames import ClientToolSchema

log = logging.getLogger("think.turns")

COALESCE = 0.05
"""Seconds a continuation waits for more results of the same batch."""
CLIENT_TOOLS_KEY = "think.chat.client_tools"
LAST_BODY_KEY = "think.chat.last_body"

Spawn = Callable[[Callable[[], Awaitable[None]]], None]


# ---- what the last chat request carried -----------------------------------------------------------


def _tools_key(session: str) -> str:
    return f"{CLIENT_TOOLS_KEY}:{session}" if session else CLIENT_TOOLS_KEY


def encode_client_tools(client_tools: Sequence[ClientToolSchema]) -> list[JSONObject]:
    return [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in client_tools]


def decode_client_tools(entries: Sequence[JSONObject] | None) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    for entry in entries or ():
        try:
            tools.append(client_tool(str(entry["name"]), description=str(entry.get("description") or ""),
                                     input_schema=entry.get("parameters")))
        except (ConfigurationError, KeyError, TypeError):
            log.warning("ignoring a stored client tool that is not valid: %r", entry)
    return tuple(tools)


def client_tool_schemas(raw: Sequence[ClientToolSchema | Mapping[str, Any]]) -> list[ClientToolSchema]:
    """Client tool schemas given in Python (`ClientToolSchema`s or `{name, description, parameters}`
    dicts, the original's `clientTools`), checked as a chat request's are; `ProtocolError` if one is
    not a valid tool."""
    from think.protocol.frames import ClientToolSchema

    schemas: list[ClientToolSchema] = []
    for item in raw:
        schema = item if isinstance(item, ClientToolSchema) else ClientToolSchema(
            name=str(item.get("name") or ""), description=str(item.get("description") or ""),
            parameters=item.get("parameters"))
        try:
            client_tool(schema.name, description=schema.description, input_schema=schema.parameters)
        except ConfigurationError as exc:
            raise ProtocolError(f"client_tools: {exc}") from exc
        schemas.append(schema)
    return schemas


def usable_client_tools(agent: Think, schemas: Sequence[ClientToolSchema],
                        session: str = "") -> tuple[list[ClientToolSchema], list[str]]:
    """The schemas a turn of `session` may use and the names ignored because a server tool has
    them (`think.turns.trust.split_client_tools`)."""
    server = tool_kinds(agent, (), agent.sessions.session(session) if session else None).server
    kept, ignored = split_client_tools(schemas, server)
    for name in ignored:
        log.warning("client tool %r ignored: a server tool has that name", name)
    return kept, ignored


def remember_request(agent: Think, client_tools: Sequence[ClientToolSchema] | None, body: JSONObject | None,
                     *, replace_body: bool = True, session: str = "") -> None:
    """Store a request's client tools (a non-empty list replaces the stored one, an empty list
    clears it, None keeps it) and, with `replace_body`, its custom body (empty: cleared).
    `session`: a session other than the root keeps its own client tools (no body)."""
    if client_tools is not None:
        agent.kv_set(_tools_key(session), encode_client_tools(client_tools) or None)
    if replace_body:
        agent.kv_set(LAST_BODY_KEY, dict(body) if body else None)


def forget_request(agent: Think) -> None:
    agent.kv_set(CLIENT_TOOLS_KEY, None)
    agent.kv_set(LAST_BODY_KEY, None)


def stored_client_tools(agent: Think, session: str = "") -> tuple[Tool, ...]:
    """The client tools of the last request (of `session`) that registered any."""
    return decode_client_tools(agent.kv_get(_tools_key(session)))


def client_tool_kinds(agent: Think, client_tools: Sequence[ClientToolSchema] | None,
                      session: str = "") -> ToolKinds:
    """Which tools a client answers for (`think.turns.trust`): the agent's, and the browser's:
    `client_tools` when a frame registers some, else those stored from the last request (of
    `session`)."""
    names = ([t.name for t in client_tools] if client_tools
             else [t.name for t in stored_client_tools(agent, session)])
    return tool_kinds(agent, names, agent.sessions.session(session) if session else None)


async def continue_session(agent: Think, session_id: str, message: Message | None,
                           auto_continue: bool) -> ToolAnswer:
    """After an answer in a session other than the root: with `auto_continue`, once every call
    of the batch has its answer, run the continuation turn now (awaited) with the session's
    client tools; `ToolAnswer.continuation` is its result."""
    if message is None:
        return ToolAnswer(None)
    history = agent.sessions.session(session_id).history()
    if not auto_continue or mid_batch(message) or not history or history[-1].id != message.id:
        return ToolAnswer(message)  # not complete yet, or a newer message came in: nothing to continue
    result = await agent.run(TurnRequest(request_id=str(uuid.uuid4()), continuation=True, session_id=session_id,
                                         client_tools=stored_client_tools(agent, session_id),
                                         trigger="auto-continuation"))
    return ToolAnswer(message, result)


def stored_body(agent: Think) -> JSONObject | None:
    body = agent.kv_get(LAST_BODY_KEY)
    return body if isinstance(body, dict) else None


# ---- the controller ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolAnswer:
    """What `Think.add_tool_result` / `Think.approve_tool_call` did."""

    message: Message | None
    """The updated message; None when no call with that id was waiting (nothing changed)."""
    continuation: TurnResult | None = None
    """The continuation this answer ran, when the agent is not served and it completed the batch
    (a served agent runs it in the background; clients see it stream)."""


@dataclass
class Continuation:
    """A continuation turn that was asked for: its request id and who asked (a connection id)."""

    request_id: str
    owner: str | None
    streaming: bool = False
    """True once its stream has started."""


class AutoContinuation:
    """Coalesces continuation requests and starts the turn when the batch is answered."""

    def __init__(self, agent: Think, *, coalesce: float = COALESCE) -> None:
        self.agent = agent
        self.coalesce = coalesce
        self.pending: Continuation | None = None
        """Asked for, not started yet."""
        self.running: Continuation | None = None
        """Admitted as a turn (queued or streaming)."""
        self._deferred: tuple[str | None] | None = None
        self._deadline = 0.0
        self._changed = anyio.Event()
        self._spawn: Spawn | None = None
        self._waiting = False
        self._generation = 0
        self.on_change: Callable[[], None] | None = None
        """Called when a continuation ends or is dropped (the server releases parked probes)."""

    # ---- wiring ------------------------------------------------------------------------------

    def attach(self, spawn: Spawn | None) -> None:
        """Run waiting continuations in this task group (a server's); None detaches."""
        self._spawn = spawn
        if spawn is not None and self.pending is not None and not self._waiting:
            spawn(self._wait_and_run)

    @property
    def busy(self) -> bool:
        """A continuation runs, or waits to start in a server's task group."""
        return self.running is not None or (self.pending is not None and self._waiting)

    # ---- requests ----------------------------------------------------------------------------

    def request(self, owner: str | None = None) -> Continuation | None:
        """Ask for a continuation (coalesced); returns the pending one, or None when deferred
        behind a running one."""
        if self.running is not None:
            self._deferred = (owner,)
            return None
        self._deadline = anyio.current_time() + self.coalesce
        if self.pending is None:
            self.pending = Continuation(str(uuid.uuid4()), owner)
            if self._spawn is not None and not self._waiting:
                self._spawn(self._wait_and_run)
        else:
            self.pending.owner = owner if owner is not None else self.pending.owner
        self.poke()
        return self.pending

    async def after_answer(self, message: Message | None, auto_continue: bool,
                           owner: str | None = None) -> ToolAnswer:
        """Ask for a continuation after an answer was applied (`auto_continue`), or re-check a
        pending one (a sibling answer may complete the batch)."""
        if message is None:
            return ToolAnswer(None)
        if not auto_continue:
            self.poke()
            if self._spawn is None and self.pending is not None:
                return ToolAnswer(message, await self.run_if_ready())
            return ToolAnswer(message)
        self.request(owner)
        if self._spawn is None:
            return ToolAnswer(message, await self.run_if_ready())
        return ToolAnswer(message)

    def poke(self) -> None:
        """Something changed (an answer applied, a turn ended): re-check a waiting continuation."""
        self._changed.set()
        self._changed = anyio.Event()

    def cancel(self, request_id: str) -> bool:
        """Drop a continuation that has not started; True if there was one."""
        if self.pending is not None and self.pending.request_id == request_id:
            self.pending = None
            self.poke()
            self._notify()
            return True
        return False

    def reset(self) -> None:
        """Forget every continuation (the chat was cleared)."""
        self._generation += 1
        self.pending = None
        self._deferred = None
        self.poke()

    def mark_streaming(self, request_id: str) -> None:
        if self.running is not None and self.running.request_id == request_id:
            self.running.streaming = True

    # ---- running -----------------------------------------------------------------------------

    def ready(self) -> bool:
        """Nothing streams, no answer is being applied, and the batch is complete."""
        if self.agent.streams.live is not None or self.agent.tool_updates.in_flight:
            return False
        history = self.agent.session.history()
        return not mid_batch(history[-1] if history else None)

    async def _wait_and_run(self) -> None:
        self._waiting = True
        try:
            pending = None
            while pending is None and self.pending is not None:  # a dropped one may be replaced
                pending = await self._wait()
        finally:
            self._waiting = False
        if pending is not None:
            await self._run(pending)

    async def _wait(self) -> Continuation | None:
        """Wait out the coalescing window, then until the batch can continue; the continuation to
        run, or None if it was dropped meanwhile."""
        pending = self.pending
        while pending is not None and self.pending is pending:
            wait = self._deadline - anyio.current_time()
            changed = self._changed
            if wait > 0:
                with anyio.move_on_after(wait):
                    await changed.wait()
                continue
            if self.ready():
                break
            await changed.wait()
        if pending is None or self.pending is not pending:
            return None
        return pending

    async def run_if_ready(self) -> TurnResult | None:
        """For callers without a server: run the pending continuation now if the batch is
        complete (no coalescing window); None if there is nothing to run yet."""
        pending = self.pending
        if pending is None or not self.ready():
            return None
        return await self._run(pending)

    async def _run(self, continuation: Continuation) -> TurnResult | None:
        self.pending = None
        generation = self._generation
        history = self.agent.session.history()
        if not history or history[-1].role != "assistant":
            self._notify()  # nothing to continue (a new user message came in meanwhile)
            return None
        self.running = continuation
        result: TurnResult | None = None
        try:
            result = await self.agent.run(TurnRequest(
                request_id=continuation.request_id, continuation=True,
                client_tools=stored_client_tools(self.agent), body=stored_body(self.agent),
                trigger="auto-continuation"))
        except Exception:
            log.exception("continuation %s crashed", continuation.request_id)
        finally:
            self.running = None
            deferred, self._deferred = self._deferred, None
            self._notify()
            if deferred is not None and generation == self._generation:
                self.request(deferred[0])
        return result

    def _notify(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:
                log.exception("a continuation listener failed")

