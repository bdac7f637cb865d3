"""`TurnFeed`: a protocol request as a seat on the agent's chat channel, and the turns it follows.

An HTTP codec (AG-UI, A2A) holds an `AgentHost` (`AgentRegistry.use`) and opens a feed on it.
The feed is a `Connection` of the host's `ChatChannel` (`think.server.chat`) that no socket
writes: what the client asks becomes the frames a WebSocket tab sends for the same thing, handed
to that channel, so it is reconciled, trusted (`think.turns.trust`), queued and run exactly as a
tab's request is, on the one durable turn path:

* `send_chat(messages, …)` — a `cf_agent_use_chat_request` (the client's transcript as UI
  messages, its frontend tools as `clientTools`, a custom body);
* `send_result(…)` / `send_approval(…)` — `cf_agent_tool_result` / `cf_agent_tool_approval`;

each raises `Refused` with the channel's reason when the channel refuses it. The turn belongs to
the host (it runs on when the HTTP client goes away). `events(request_id)` then yields that
turn's fan-out events (chunks with their `seq`, start, failure, finish) and the agent's state
changes (`StateChanged`), until the turn has finished, or the channel has ended the request
without a turn (superseded, dropped by `message_concurrency`, a cleared chat).

The feed subscribes when it is created, before it sends anything, so no event is missed.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from think.agent import Think
from think.messages import JSONObject, JSONValue
from think.protocol.codec import InvalidFrame, UnknownFrame, parse_frame
from think.protocol.frames import ClientToolSchema
from think.server.agents import AgentHost
from think.server.connection import Connection, new_connection_id
from think.stream.fanout import ChunkEvent, TurnEvent, TurnFailed, TurnFinished, TurnStarted
from think.turns.tool_results import mid_batch
from think.turns.trust import Refused

log = logging.getLogger("think.ui_protocols")

IDLE_CHECK = 1.0
"""Seconds of quiet after which a feed waiting for a turn to start asks whether it still can."""


@dataclass(frozen=True, slots=True)
class StateChanged:
    """The agent's state was set (by anyone: a tool, a WebSocket client, this request)."""

    state: Any


@dataclass(frozen=True, slots=True)
class ChannelEnded:
    """The channel ended request `request_id` (its `done` frame); `error` is its error text."""

    request_id: str
    error: str | None = None


FeedEvent = TurnEvent | StateChanged | ChannelEnded


class _NoSocket:
    async def send_text(self, data: str) -> None:  # pragma: no cover - the seat has no writer task
        raise RuntimeError("a protocol seat is not written to a socket")

    async def close(self, code: int = 1000, reason: str | None = None) -> None:  # pragma: no cover
        return None


class _Seat(Connection):
    """The feed's connection: of the frames the channel sends, keeps the refusals and the ends
    of the requests it sent (nothing else is decoded)."""

    def __init__(self, feed: TurnFeed) -> None:
        super().__init__(_NoSocket(), "protocol-" + new_connection_id())
        self.feed = feed
        self.sent: set[str] = set()
        self.errors: list[str] = []
        """Refusals of the frame being handed to the channel now."""
        self.handing = False

    def send(self, text: str) -> None:
        if '"done":true' not in text and "cf_agent_protocol_error" not in text:
            return  # a chunk (the feed has it from the fan-out) or a transcript
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:
            return
        if not isinstance(data, dict):
            return
        if data.get("type") == "cf_agent_protocol_error":
            self.errors.append(str(data.get("error") or "refused"))
        elif data.get("type") == "cf_agent_use_chat_response" and data.get("id") in self.sent and data.get("done"):
            error = str(data.get("body") or "The turn failed") if data.get("error") else None
            if error is not None and self.handing:  # refused on arrival
                self.errors.append(error)
            else:
                self.feed.push(ChannelEnded(str(data["id"]), error))


class TurnFeed:
    """A protocol request's seat on one agent (see the module docstring); a context manager."""

    def __init__(self, host: AgentHost) -> None:
        agent = host.agent
        if not isinstance(agent, Think) or host.chat is None:
            raise TypeError(f"{type(agent).__name__} is not a chat agent")
        self.host = host
        self.agent: Think = agent
        self._send: MemoryObjectSendStream[FeedEvent]
        self._receive: MemoryObjectReceiveStream[FeedEvent]
        # unbounded: the turn never waits for a slow HTTP client (a turn's events are finite)
        self._send, self._receive = anyio.create_memory_object_stream[FeedEvent](math.inf)
        self._unsubscribe = agent.fanout.subscribe(self._on_event)
        agent._state_listeners.append(self._on_state)
        self.seat = _Seat(self)
        host.connections.add(self.seat)

    @property
    def id(self) -> str:
        """The seat's connection id (the `source` of state it sets, the `owner` of its turns)."""
        return self.seat.id

    def __enter__(self) -> TurnFeed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.host.disconnect(self.seat)
        self._unsubscribe()
        if self._on_state in self.agent._state_listeners:
            self.agent._state_listeners.remove(self._on_state)
        self._send.close()
        self._receive.close()

    def push(self, event: FeedEvent) -> None:
        try:
            self._send.send_nowait(event)
        except anyio.ClosedResourceError:
            pass  # the request is over; the turn goes on without it

    async def _on_event(self, event: TurnEvent) -> None:
        self.push(event)

    async def _on_state(self, state: Any, source: str | None) -> None:
        self.push(StateChanged(state))

    # ---- frames to the channel -------------------------------------------------------------------

    async def _hand(self, wire: JSONObject) -> None:
        try:
            frame = parse_frame(orjson.dumps(wire))
        except (InvalidFrame, UnknownFrame) as exc:
            raise Refused(str(exc)) from None
        chat = self.host.chat
        assert chat is not None
        self.seat.errors.clear()
        self.seat.handing = True
        try:
            await chat.receive(self.seat, frame)
        finally:
            self.seat.handing = False
        if self.seat.errors:
            raise Refused("; ".join(self.seat.errors))

    async def send_chat(self, messages: Sequence[JSONObject], *, client_tools: Sequence[ClientToolSchema] | None,
                        body: JSONObject | None = None) -> str:
        """A chat request with `messages` (the client's transcript, UI messages); its request id.
        Raises `Refused` when the channel refuses it at once."""
        request_id = str(uuid.uuid4())
        content: dict[str, JSONValue] = {k: v for k, v in (body or {}).items()
                                         if k not in ("messages", "clientTools", "trigger")}
        content["messages"] = list(messages)
        if client_tools is not None:
            content["clientTools"] = [{"name": t.name, "description": t.description, "parameters": t.parameters}
                                      for t in client_tools]
        self.seat.sent.add(request_id)
        await self._hand({"type": "cf_agent_use_chat_request", "id": request_id,
                          "init": {"method": "POST", "body": orjson.dumps(content).decode()}})
        return request_id

    async def send_result(self, tool_call_id: str, tool_name: str, output: Any, *, error: str | None = None,
                          client_tools: Sequence[ClientToolSchema] | None = None,
                          auto_continue: bool = True) -> None:
        """A client tool's result (`cf_agent_tool_result`). Raises `Refused`."""
        wire: JSONObject = {"type": "cf_agent_tool_result", "toolCallId": tool_call_id, "toolName": tool_name,
                            "output": output, "state": "output-error" if error is not None else "output-available",
                            "autoContinue": auto_continue}
        if error is not None:
            wire["errorText"] = error
        if client_tools:
            wire["clientTools"] = [{"name": t.name, "description": t.description, "parameters": t.parameters}
                                   for t in client_tools]
        await self._hand(wire)

    async def send_approval(self, tool_call_id: str, approved: bool, *, auto_continue: bool = True) -> None:
        """An answer to an approval (`cf_agent_tool_approval`). Raises `Refused`."""
        await self._hand({"type": "cf_agent_tool_approval", "toolCallId": tool_call_id, "approved": approved,
                          "autoContinue": auto_continue})

    def continuation(self) -> str | None:
        """The continuation the answers asked for: its request id; None while the batch waits
        for other answers (nothing will run now) or when it waits behind a running continuation
        (then follow `events(None)`, the next turn that starts)."""
        history = self.agent.session.history()
        if mid_batch(history[-1] if history else None):
            return None
        pending = self.agent.continuations.pending
        return pending.request_id if pending is not None else None

    # ---- following -------------------------------------------------------------------------------

    async def next_event(self, within: float | None = None) -> FeedEvent | None:
        """The next event of any turn (or state change); None when `within` seconds pass first."""
        with anyio.move_on_after(within):
            return await self._receive.receive()
        return None

    def may_start(self, request_id: str | None) -> bool:
        """Can turn `request_id` (None: any turn) still start? A chat request this feed sent is
        ended by the channel (`ChannelEnded`); a continuation while it is asked for or running; a
        turn streaming now; for None, while any turn, continuation or recovery is under way."""
        agent = self.agent
        if request_id in self.seat.sent:
            return True
        live = agent.streams.live
        waiting = [c.request_id for c in (agent.continuations.pending, agent.continuations.running) if c is not None]
        if request_id is None:
            return live is not None or bool(waiting) or agent.recovery.recovering is not None or agent.is_busy()
        return request_id in waiting or (live is not None and live.request_id == request_id)

    async def events(self, request_id: str | None) -> AsyncIterator[FeedEvent]:
        """The events of turn `request_id` (None: the next turn that starts) and state changes,
        ending with its `TurnFinished`, with `ChannelEnded` when it ended without a turn, or with
        nothing when it can no longer start (`may_start`, asked every `IDLE_CHECK` seconds of quiet
        before it has started: a continuation dropped by a clear, say)."""
        started = False
        while True:
            event = await self.next_event(IDLE_CHECK)
            if event is None:
                if not started and not self.may_start(request_id):
                    return
                continue
            if isinstance(event, StateChanged):
                yield event
                continue
            if request_id is None and isinstance(event, TurnStarted):
                request_id = event.request_id
            if isinstance(event, ChannelEnded):
                if event.request_id == request_id and not started:
                    yield event
                    return
                continue
            if not isinstance(event, ChunkEvent | TurnStarted | TurnFailed | TurnFinished):
                continue
            if event.request_id != request_id:
                continue
            started = True
            yield event
            if isinstance(event, TurnFinished):
                return
