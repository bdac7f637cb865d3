"""`AgentRegistry` and `AgentHost`: one served instance per address, with an owner for its work.

An `AgentHost` exists while an agent has sockets or server-side work (turns, RPC calls). It holds
a lease on the instance (so the runtime does not hibernate it), its `Connections`, the chat
channel, the workspace feed (`think_workspace_change` frames), and a task group that owns every
turn and call started from a frame: a turn keeps running when the tab that asked for it closes.
When the last connection is gone and the last task has finished, the host ends and releases the
lease; the runtime hibernates the instance after its idle timeout.

The registry's own task group (entered in the app's lifespan) owns the hosts and the runtime's
hibernation sweeper.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, nullcontext
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from think.agent import Think
from think.protocol.codec import InvalidFrame, UnknownFrame, encode_frame, parse_frame
from think.protocol.frames import (
    ChatResponse,
    Identity,
    McpServers,
    ProtocolErrorFrame,
    RpcRequest,
    RpcResponse,
    SetState,
    State,
    StateError,
    StreamResumeNone,
    StreamResumeRequest,
)
from think.runtime.agent import Agent
from think.runtime.base import AgentRuntime
from think.runtime.embedded import EmbeddedRuntime
from think.server.chat import ChatChannel
from think.server.connection import Connection, Connections
from think.server.rpc import call_method
from think.server.workspace import WorkspaceFeed

log = logging.getLogger("think.server")

Key = tuple[type[Agent], str]
MAX_INVALID_FRAMES = 100
"""Refused frames after which a connection is closed (1008)."""
MAX_CALLS_IN_FLIGHT = 64
"""RPC calls one connection may have running at once."""


class AgentHost:
    """One live agent served to sockets: connections, protocol dispatch and owned tasks."""

    def __init__(self, agent: Agent, tasks: TaskGroup) -> None:
        self.agent = agent
        self.connections = Connections()
        self._tasks = tasks
        self._users = 0
        self.done = anyio.Event()
        """Set when nothing uses the host any more; it must not take new users after that."""
        self.released = anyio.Event()
        """Set when the host has ended and released its lease on the agent."""
        self.chat = ChatChannel(agent, self.connections, self.spawn) if isinstance(agent, Think) else None
        self.workspace = (WorkspaceFeed(agent.workspace, self.connections, self.spawn)
                          if isinstance(agent, Think) else None)
        self._unsubscribe_mcp: Callable[[], None] | None = None

    def open(self) -> None:
        if self.chat is not None:
            self.chat.open()
        if self.workspace is not None:
            self.workspace.open()
        self.agent._state_listeners.append(self._on_state)
        if isinstance(self.agent, Think):
            self._unsubscribe_mcp = self.agent.mcp.subscribe(self._on_mcp)

    def close(self) -> None:
        if self.chat is not None:
            self.chat.close()
        if self.workspace is not None:
            self.workspace.close()
        if self._on_state in self.agent._state_listeners:
            self.agent._state_listeners.remove(self._on_state)
        if self._unsubscribe_mcp is not None:
            self._unsubscribe_mcp()
            self._unsubscribe_mcp = None

    # ---- users: connections and tasks ------------------------------------------------------------

    def acquire(self) -> None:
        self._users += 1

    def release(self) -> None:
        self._users -= 1
        if self._users == 0:
            self.done.set()

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run `fn` in this agent's task group; the host stays up until it returns."""
        self.acquire()

        async def run() -> None:
            try:
                await fn()
            finally:
                self.release()

        self._tasks.start_soon(run)

    # ---- connections -----------------------------------------------------------------------------

    def connect(self, connection: Connection) -> None:
        """Add a socket and queue the connect sequence (chat frames, identity, state, MCP)."""
        self.connections.add(connection)
        if self.chat is not None:
            self.chat.greet(connection)
        agent = self.agent
        connection.send_frame(Identity(agent.name, type(agent).kebab_name()))
        if agent.has_state:
            connection.send_frame(State(agent.state))
        connection.send_frame(self._mcp_frame())

    def disconnect(self, connection: Connection) -> None:
        self.connections.remove(connection)
        if self.chat is not None:
            self.chat.forget(connection)

    def refuse(self, connection: Connection, frame: ChatResponse | RpcResponse | ProtocolErrorFrame) -> None:
        """Answer a frame we could not accept; a client that keeps sending them is closed."""
        reason = frame.error if isinstance(frame, ProtocolErrorFrame | RpcResponse) else frame.body
        connection.refusals.refused("a frame", reason)
        connection.send_frame(frame)
        connection.invalid_frames += 1
        if connection.invalid_frames >= MAX_INVALID_FRAMES:
            connection.close(1008, f"Too many invalid frames ({MAX_INVALID_FRAMES})")

    async def receive(self, connection: Connection, text: str) -> None:
        """Handle one text frame from `connection`. Never raises for bad input."""
        try:
            frame = parse_frame(text)
        except UnknownFrame as exc:
            self.refuse(connection, ProtocolErrorFrame(f"Not a protocol frame: {exc}"))
            return
        except InvalidFrame as exc:
            if exc.frame_type == "cf_agent_use_chat_request" and exc.frame_id:
                self.refuse(connection, ChatResponse(id=exc.frame_id, body=str(exc), done=True, error=True))
            elif exc.frame_type == "rpc" and exc.frame_id:
                self.refuse(connection, RpcResponse(id=exc.frame_id, success=False, error=str(exc)))
            else:
                self.refuse(connection, ProtocolErrorFrame(str(exc)))
            return
        match frame:
            case SetState(state=state):
                try:
                    await self.agent.set_state(state, source=connection.id)
                except Exception as exc:
                    log.info("state update from %s rejected: %r", connection.id, exc)
                    connection.send_frame(StateError("State update rejected"))
            case RpcRequest():
                self._call(connection, frame)
            case _ if self.chat is not None:
                await self.chat.receive(connection, frame)
            case StreamResumeRequest(probe_id=probe_id):  # an agent without chat never streams
                connection.send_frame(StreamResumeNone("idle", probe_id))
            case _:
                self.refuse(connection, ProtocolErrorFrame(f"{type(self.agent).__name__} is not a chat agent"))

    def _call(self, connection: Connection, frame: RpcRequest) -> None:
        if connection.calls_in_flight >= MAX_CALLS_IN_FLIGHT:  # load, not a bad frame: not counted
            connection.send_frame(RpcResponse(id=frame.id, success=False,
                                              error=f"Too many calls in flight ({MAX_CALLS_IN_FLIGHT})"))
            return
        connection.calls_in_flight += 1

        async def run() -> None:
            try:
                await call_method(self.agent, frame, connection.send)
            finally:
                connection.calls_in_flight -= 1

        self.spawn(run)

    def _mcp_frame(self) -> McpServers:
        return McpServers(self.agent.mcp.state()) if isinstance(self.agent, Think) else McpServers()

    def _on_mcp(self) -> None:
        """Any MCP connection changed: every socket gets the new `cf_agent_mcp_servers`."""
        self.connections.broadcast(encode_frame(self._mcp_frame()))

    async def _on_state(self, state: Any, source: str | None) -> None:
        self.connections.broadcast(encode_frame(State(state)), exclude=source)


class AgentRegistry:
    """The served agents of one app: a host per live address, owned by `running()`."""

    def __init__(self, runtime: AgentRuntime, *, sweep_interval: float | None = 30.0,
                 idle_timeout: float | None = None) -> None:
        self.runtime = runtime
        self.sweep_interval = sweep_interval
        self.idle_timeout = idle_timeout
        self._hosts: dict[Key, AgentHost] = {}
        self._starting: dict[Key, anyio.Event] = {}
        self._tasks: TaskGroup | None = None
        self._fallback: asyncio.Task[None] | None = None
        self._fallback_ready = asyncio.Event()  # created outside any loop; bound on first wait

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve agents until the block ends (the app's lifespan); then stop their work."""
        embedded = self.runtime if isinstance(self.runtime, EmbeddedRuntime) else None
        if embedded is not None and self.idle_timeout is not None:
            embedded.idle_timeout = self.idle_timeout
        # one process per data directory: a second server fails here, at startup
        with embedded.owning() if embedded is not None else nullcontext():
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                if embedded is not None and self.sweep_interval:
                    tasks.start_soon(lambda: embedded.run_sweeper(interval=self.sweep_interval or 30.0))
                if embedded is not None:
                    tasks.start_soon(embedded.run_alarms)  # schedules (and resumed submissions) fire when served
                try:
                    yield
                finally:
                    self._tasks = None
                    tasks.cancel_scope.cancel()
            if embedded is not None:
                with anyio.CancelScope(shield=True):
                    await embedded.hibernate_idle(older_than=0)

    async def _owner(self) -> TaskGroup:
        """The task group that owns the hosts. When the app's lifespan did not run (a Starlette
        `Mount` does not run the lifespan of the app it mounts), a background task is started
        on first use to serve as the owner."""
        if self._tasks is None:
            if self._fallback is None:
                log.info("the think app's lifespan did not run; serving agents from a background task "
                         "(enter app.router.lifespan_context(app) in your lifespan for a clean shutdown)")
                self._fallback = asyncio.get_running_loop().create_task(self._serve_forever())
            await self._fallback_ready.wait()
        assert self._tasks is not None
        return self._tasks

    async def _serve_forever(self) -> None:
        async with self.running():
            self._fallback_ready.set()
            await anyio.sleep_forever()

    @asynccontextmanager
    async def use(self, cls: type[Agent], name: str) -> AsyncIterator[AgentHost]:
        """The host of `(cls, name)`, started if needed, kept up until the block ends."""
        host = await self._acquire(cls, name)
        try:
            yield host
        finally:
            host.release()

    async def _acquire(self, cls: type[Agent], name: str) -> AgentHost:
        key: Key = (cls, name)
        for _ in range(100):  # each round waits for a host that was starting or ending
            host = self._hosts.get(key)
            if host is not None and not host.done.is_set():
                host.acquire()
                return host
            if (starting := self._starting.get(key)) is not None:
                await starting.wait()
                continue
            event = self._starting[key] = anyio.Event()
            try:
                tasks = await self._owner()
                host = await tasks.start(self._serve, cls, name)
                assert isinstance(host, AgentHost)
                host.acquire()
                return host
            finally:
                del self._starting[key]
                event.set()
        raise RuntimeError(f"could not start a host for {cls.__name__} {name!r}")

    async def _serve(self, cls: type[Agent], name: str, *, task_status: TaskStatus[AgentHost]) -> None:
        key: Key = (cls, name)
        host: AgentHost | None = None
        try:
            async with self.runtime.lease(cls, name) as agent, anyio.create_task_group() as tasks:
                host = AgentHost(agent, tasks)
                host.open()
                self._hosts[key] = host
                task_status.started(host)
                try:
                    await host.done.wait()
                finally:
                    if self._hosts.get(key) is host:
                        del self._hosts[key]
                    host.close()
        finally:
            if host is not None:
                host.released.set()
