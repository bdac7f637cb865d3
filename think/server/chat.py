"""`ChatChannel`: the chat half of the protocol for one `Think` agent and its connections.

Frames in → the agent (`run`, `cancel_chat`, `clear_messages`); the agent's fan-out events →
frames out:

    TurnStarted        (the stream is now resumable)
    ChunkEvent         {"type":"cf_agent_use_chat_response","id","body":<chunk>,"done":false,"seq":n}
    TurnFailed         {...,"body":<error text>,"done":false,"error":true,"messageIds":[…]}
    TranscriptChanged  {"type":"cf_agent_chat_messages","messages":[…]}  (all but `exclude`)
    TurnFinished       {...,"body":"","done":true,"outcome":…,"messageIds":[…]}
                       or, for a turn that failed before it streamed,
                       {...,"body":<error text>,"done":true,"error":true}

Chunk, error and done frames skip connections that were offered the running stream and have
not ACKed it yet; they get the stream as a replay when they do.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from think.agent import Think
from think.errors import ConfigurationError
from think.messages import Message
from think.protocol.codec import chunk_body, encode_frame, encode_transcript
from think.protocol.frames import (
    ChatClear,
    ChatRequest,
    ChatRequestCancel,
    ChatResponse,
    ClientFrame,
    ClientMessages,
    ProtocolErrorFrame,
    StreamResumeAck,
    StreamResumeNone,
    StreamResumeRequest,
    StreamResuming,
    ToolApproval,
    ToolResult,
)
from think.protocol.transcript import InvalidMessage, LazyMessages
from think.server.connection import Connection, Connections
from think.stream.fanout import ChunkEvent, TranscriptChanged, TurnEvent, TurnFailed, TurnFinished, TurnStarted
from think.tools.tool import Tool, client_tool
from think.turns.turn import TurnRequest

log = logging.getLogger("think.server")

Spawn = Callable[[Callable[[], Awaitable[None]]], None]
"""Runs a task in the agent's server-side task group."""

MAX_WAITING_TURNS = 64
"""Chat requests of one agent that may be queued or running at once; more are refused."""


@dataclass
class ActiveStream:
    """The turn that is streaming now, and its chunks so far (for clients that join mid-turn).

    Kept in memory for the running turn only; a durable buffer that survives restarts replaces
    it later without changing the frames.
    """

    request_id: str
    continuation: bool = False
    chunks: list[tuple[int, str]] = field(default_factory=list)
    """`(seq, body)` of every chunk sent so far."""

    def replay(self, connection: Connection) -> None:
        for seq, body in self.chunks:
            connection.send_frame(ChatResponse(id=self.request_id, body=body, seq=seq, replay=True))
        connection.send_frame(ChatResponse(id=self.request_id, replay=True, replay_complete=True))


def _from_web(message: Message) -> Message:
    if message.role != "user":
        return message
    metadata = dict(message.metadata) if isinstance(message.metadata, dict) else {}
    metadata["channel"] = "web"
    return message.model_copy(update={"metadata": metadata})


class ChatChannel:
    """Serves the chat protocol of one live `Think` instance to its connections."""

    def __init__(self, agent: Think, connections: Connections, spawn: Spawn) -> None:
        self.agent = agent
        self.connections = connections
        self.spawn = spawn
        self.stream: ActiveStream | None = None
        self.awaiting_ack: set[str] = set()
        """Connections offered the running stream that have not ACKed it (no live chunks yet)."""
        self._waiting: dict[str, tuple[str, ...]] = {}
        """Request id → user message ids, for chat requests queued or running."""
        self._failed: set[str] = set()
        self._clearing = False
        self._unsubscribe: Callable[[], None] | None = None

    # ---- lifecycle -------------------------------------------------------------------------------

    def open(self) -> None:
        self._unsubscribe = self.agent.fanout.subscribe(self._on_event)

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def greet(self, connection: Connection) -> None:
        """The chat frames a new socket gets first: the transcript, or the running stream's id.

        No transcript while a turn streams: it would clobber the message being resumed.
        """
        if self.stream is not None:
            self.awaiting_ack.add(connection.id)
            connection.send_frame(StreamResuming(self.stream.request_id))
        else:
            connection.send(encode_transcript(self.agent.session.history_json(), connect=True))

    def forget(self, connection: Connection) -> None:
        self.awaiting_ack.discard(connection.id)

    # ---- frames in -------------------------------------------------------------------------------

    async def receive(self, connection: Connection, frame: ClientFrame) -> None:
        match frame:
            case ChatRequest():
                self._accept(connection, frame)
            case ChatRequestCancel(id=request_id):
                if not self.agent.cancel_chat(request_id) and request_id in self._waiting:
                    self.agent.cancellations.cancel_pending(request_id)  # still queued
            case ChatClear():
                await self._clear(connection)
            case StreamResumeRequest(probe_id=probe_id):
                if self.stream is not None:
                    self.awaiting_ack.add(connection.id)
                    connection.send_frame(StreamResuming(self.stream.request_id, probe_id))
                else:
                    connection.send_frame(StreamResumeNone("idle", probe_id))
            case StreamResumeAck(id=request_id):
                self.awaiting_ack.discard(connection.id)
                if self.stream is not None and self.stream.request_id == request_id:
                    self.stream.replay(connection)
                else:  # it finished before the ACK: the client only needs to close its stream
                    connection.send_frame(ChatResponse(id=request_id, done=True, replay=True))
            case ClientMessages():
                log.debug("ignoring cf_agent_chat_messages from %s: the server's transcript is authoritative",
                          connection.id)
            case ToolResult() | ToolApproval():
                connection.send_frame(ProtocolErrorFrame(
                    "tool results and approvals from clients are not supported by this server yet"))
            case _:
                connection.send_frame(ProtocolErrorFrame(f"{type(frame).__name__} is not a chat frame"))

    def _refuse(self, connection: Connection, request_id: str, reason: str) -> None:
        connection.send_frame(ChatResponse(id=request_id, body=reason, done=True, error=True))

    def _accept(self, connection: Connection, frame: ChatRequest) -> None:
        request_id = frame.id
        if request_id in self._waiting:
            self._refuse(connection, request_id, f"A turn with request id {request_id!r} is already running")
            return
        if len(self._waiting) >= MAX_WAITING_TURNS:
            self._refuse(connection, request_id, f"Too many turns are waiting ({MAX_WAITING_TURNS}); "
                                                 "send again when one has finished")
            return
        try:
            tools: tuple[Tool, ...] = tuple(
                client_tool(t.name, description=t.description, input_schema=t.parameters)
                for t in frame.client_tools or ())
        except ConfigurationError as exc:
            self._refuse(connection, request_id, f"clientTools: {exc}")
            return
        session = self.agent.session
        incoming = LazyMessages.of(frame.messages)
        # Clients resend their whole transcript; only ids we have not stored are read (and so
        # validated) and saved. Edited copies of stored messages are ignored for now.
        unknown = [i for i in range(len(incoming)) if session.get(incoming.id_at(i)) is None]
        try:
            fresh = [_from_web(incoming[i]) for i in unknown]
        except InvalidMessage as exc:
            self._refuse(connection, request_id, str(exc))
            return
        new_users = tuple(m.id for m in fresh if m.role == "user")
        last_user = next((incoming.id_at(i) for i in reversed(range(len(incoming)))
                          if incoming.role_at(i) == "user"), None)
        parent_id = None
        if frame.is_regeneration and incoming and session.get(incoming.id_at(-1)) is not None:
            parent_id = incoming.id_at(-1)  # the reply becomes a new branch under this message

        def new_messages(history: list[Message]) -> list[Message]:
            return [m for m in fresh if session.get(m.id) is None]  # stored while this turn waited?

        self._waiting[request_id] = new_users or ((last_user,) if last_user else ())
        turn = TurnRequest(request_id=request_id, messages=new_messages, client_tools=tools,
                           body=frame.body or None, parent_id=parent_id, sender=connection.id)

        async def run() -> None:
            try:
                await self.agent.run(turn)
            except Exception as exc:  # run_turn reports failures itself; this is a bug in it
                log.exception("turn %s crashed", request_id)
                self._broadcast_live(ChatResponse(id=request_id, body=f"Internal error: {exc}", done=True,
                                                  error=True))
            finally:
                self._waiting.pop(request_id, None)

        self.spawn(run)

    async def _clear(self, connection: Connection) -> None:
        self._clearing = True
        try:
            await self.agent.clear_messages()
        finally:
            self._clearing = False
        self.connections.broadcast(encode_frame(ChatClear()), exclude=connection.id)

    # ---- events out ------------------------------------------------------------------------------

    def _broadcast_live(self, frame: ChatResponse) -> None:
        self.connections.broadcast(encode_frame(frame), exclude=self.awaiting_ack or None)

    def _message_ids(self, request_id: str, from_event: Sequence[str]) -> tuple[str, ...]:
        return tuple(from_event) or self._waiting.get(request_id, ())

    def _transcript(self, messages: Sequence[Message], *, connect: bool = False) -> str:
        session = self.agent.session
        path = session.history()
        if len(messages) == len(path) and all(a is b for a, b in zip(messages, path, strict=True)):
            return encode_transcript(session.history_json(), connect=connect)  # stored JSON, not re-encoded
        return encode_transcript([m.dumps() for m in messages], connect=connect)

    async def _on_event(self, event: TurnEvent) -> None:
        match event:
            case ChunkEvent(request_id=request_id, seq=seq, chunk=chunk, continuation=continuation):
                stream = self.stream
                if stream is None or stream.request_id != request_id:
                    stream = self.stream = ActiveStream(request_id, continuation)
                body = chunk_body(chunk)
                stream.chunks.append((seq, body))
                self._broadcast_live(ChatResponse(id=request_id, body=body, seq=seq, continuation=continuation))
            case TurnStarted(request_id=request_id, continuation=continuation):
                self.stream = ActiveStream(request_id, continuation)
            case TurnFailed(request_id=request_id, error=text, continuation=continuation, user_message_ids=ids):
                self._failed.add(request_id)
                self._broadcast_live(ChatResponse(
                    id=request_id, body=text, error=True, continuation=continuation,
                    message_ids=None if continuation else self._message_ids(request_id, ids)))
            case TranscriptChanged(messages=messages, exclude=exclude):
                if self._clearing and not messages:
                    return  # a client's clear: the others get cf_agent_chat_clear instead
                self.connections.broadcast(self._transcript(messages), exclude=exclude)
            case TurnFinished():
                self._finish(event)

    def _finish(self, event: TurnFinished) -> None:
        request_id = event.request_id
        failed_mid_stream = request_id in self._failed
        self._failed.discard(request_id)
        if event.outcome == "skipped":  # the chat was cleared while it waited
            frame = ChatResponse(id=request_id, done=True)
        elif event.outcome == "error" and not failed_mid_stream:  # failed before it streamed
            frame = ChatResponse(id=request_id, body=event.error or "The turn failed", done=True, error=True)
        else:
            frame = ChatResponse(
                id=request_id, done=True, outcome=event.outcome, continuation=event.continuation,
                message_ids=None if event.continuation else self._message_ids(request_id, event.user_message_ids))
        self._broadcast_live(frame)
        if self.stream is not None and self.stream.request_id == request_id:
            self.stream = None
            self.awaiting_ack.clear()  # a late ACK gets {"done":true,"replay":true}
