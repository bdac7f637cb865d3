"""`ChatChannel`: the chat half of the protocol for one `Think` agent and its connections.

Frames in → the agent (turns, cancels, clears, tool results and approvals, the resume
handshake); the agent's fan-out events → frames out:

    ChunkEvent         {"type":"cf_agent_use_chat_response","id","body":<chunk>,"done":false,"seq":n}
    TurnFailed         {...,"body":<error text>,"done":false,"error":true,"messageIds":[…]}
    TranscriptChanged  {"type":"cf_agent_chat_messages","messages":[…]}  (all but `exclude`)
    MessageChanged     {"type":"cf_agent_message_updated","message":{…}}  (all)
    AgentToolEvent     {"type":"agent-tool-event","parentToolCallId"?,"sequence":n,"event":{…}}  (all)
    TurnFinished       {...,"body":"","done":true,"outcome":…,"messageIds":[…]}
                       or, for a turn that failed before it streamed,
                       {...,"body":<error text>,"done":true,"error":true}

Chunk frames skip connections that were offered the running stream and have not ACKed it yet:
they get the stream replayed from the resumable buffer when they do (`replay.py`; see `resume.py` for the
decisions, `think.stream.resumable` for the buffer). Error and done frames go to everyone.

A chat request is reconciled against the stored transcript (`reconcile.py`), put through the
agent's `message_concurrency` (`think.turns.concurrency`), and runs as a queued turn; its new
user messages are saved when it reaches the front of the queue. Tool results and approvals are
applied in arrival order, and with `autoContinue` they ask for a continuation turn
(`think.turns.continuation`).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Awaitable, Callable, Sequence

import orjson

from think.agent import Think
from think.errors import ConfigurationError
from think.messages import Message
from think.protocol.codec import encode_frame, encode_transcript
from think.protocol.frames import (
    ChatClear,
    ChatRecovering,
    ChatRequest,
    ChatRequestCancel,
    ChatResponse,
    ClientFrame,
    ClientMessages,
    ClientToolSchema,
    MessageUpdated,
    ProtocolErrorFrame,
    StreamResumeAck,
    StreamResumeRequest,
    StreamResuming,
    ToolApproval,
    ToolResult,
)
from think.protocol.payloads import agent_tool_event
from think.protocol.transcript import InvalidMessage
from think.server.chat_resume import ResumeHandshake
from think.server.connection import Connection, Connections
from think.server.reconcile import reconcile
from think.server.replay import base_first
from think.server.resume import answer_probe, greeting
from think.stream.fanout import (
    AgentToolEvent,
    ChunkEvent,
    MessageChanged,
    Recovering,
    TranscriptChanged,
    TurnEvent,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from think.tools.tool import client_tool
from think.turns.concurrency import ConcurrencyPolicy, Submit, SubmitAdmission
from think.turns.continuation import client_tool_kinds, remember_request, stored_client_tools
from think.turns.tool_results import ANY_TOOL_STATE, find_part
from think.turns.trust import Refused, ToolKinds, shadowed_message, split_client_tools
from think.turns.turn import TurnRequest, TurnResult

log = logging.getLogger("think.server")

Spawn = Callable[[Callable[[], Awaitable[None]]], None]
"""Runs a task in the agent's server-side task group."""

MAX_WAITING_TURNS = 64
"""Chat requests of one agent that may be queued or running at once; more are refused."""


class ChatChannel(ResumeHandshake):
    """Serves the chat protocol of one live `Think` instance to its connections."""

    def __init__(self, agent: Think, connections: Connections, spawn: Spawn) -> None:
        self.agent = agent
        self.connections = connections
        self.spawn = spawn
        self.awaiting_ack: set[str] = set()
        """Connections offered the running stream that have not ACKed it (no live chunks yet)."""
        self.parked: set[str] = set()
        """Connections told `cf_agent_stream_pending`: they get `resuming` when a stream starts."""
        self._waiting: dict[str, tuple[str, ...]] = {}
        """Request id → user message ids, for chat requests queued or running."""
        self._pre_stream: dict[str, None] = {}
        """Chat requests accepted that have not started streaming, oldest first."""
        self._queued: dict[str, tuple[str, list[Message]]] = {}
        """Request id → (sender, new messages) of chat requests whose messages are not saved yet."""
        self._failed: set[str] = set()
        self._clearing = False
        self._admission = SubmitAdmission()
        self._unsubscribe: Callable[[], None] | None = None

    # ---- lifecycle -------------------------------------------------------------------------------

    def open(self) -> None:
        self._unsubscribe = self.agent.fanout.subscribe(self._on_event)
        self.agent.continuations.attach(self.spawn)
        self.agent.continuations.on_change = self._release_parked_if_idle

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.agent.continuations.attach(None)
        self.agent.continuations.on_change = None

    def greet(self, connection: Connection) -> None:
        """The chat frames a new socket gets first: the running stream's id, or (maybe a
        `cf_agent_stream_pending`, then) the transcript. No transcript while a stream is active:
        it would clobber the message being resumed. Then the recovering flag, if a recovery runs,
        and the retained agent-tool runs (`think.subagents.runs`)."""
        answer = greeting(self._situation())
        if answer is not None:
            self._apply(connection, answer)
        if answer is None or answer.action == "park" or base_first(self.agent):
            connection.send(self._transcript_for(connection.id, self.agent.session.history_json(), connect=True))
        replays_orphan = answer is not None and answer.action == "await-ack" and self.agent.streams.live is None
        if (recovering := self.agent.recovery.recovering) is not None and not replays_orphan:
            connection.send_frame(ChatRecovering(True, recovering))  # it missed the transition
        for frame in self.agent.agent_tool_runs.frames():  # recent child runs, `"replay": true`
            connection.send(orjson.dumps(frame).decode())

    def forget(self, connection: Connection) -> None:
        self.awaiting_ack.discard(connection.id)
        self.parked.discard(connection.id)

    # ---- frames in -------------------------------------------------------------------------------

    async def receive(self, connection: Connection, frame: ClientFrame) -> None:
        match frame:
            case ChatRequest():
                self._accept(connection, frame)
            case ChatRequestCancel(id=request_id):
                self._cancel(request_id)
            case ChatClear():
                await self._clear(connection)
            case StreamResumeRequest(probe_id=probe_id):
                self._apply(connection, answer_probe(self._situation(), connection.id, probe_id))
            case StreamResumeAck(id=request_id):
                self._ack(connection, request_id)
            case ClientMessages():
                log.debug("ignoring cf_agent_chat_messages from %s: the server's transcript is authoritative",
                          connection.id)
            case ToolResult():
                await self._tool_result(connection, frame)
            case ToolApproval():
                await self._tool_approval(connection, frame)
            case _:
                connection.refusals.refused("a frame", f"{type(frame).__name__} is not a chat frame")
                connection.send_frame(ProtocolErrorFrame(f"{type(frame).__name__} is not a chat frame"))

    def _refuse(self, connection: Connection, request_id: str, reason: str) -> None:
        connection.send_frame(ChatResponse(id=request_id, body=reason, done=True, error=True))

    def _policy(self) -> ConcurrencyPolicy:
        try:
            return ConcurrencyPolicy.parse(self.agent.message_concurrency)
        except ConfigurationError:
            log.exception("%s.message_concurrency is not valid; queueing", type(self.agent).__name__)
            return ConcurrencyPolicy()

    def _accept(self, connection: Connection, frame: ChatRequest) -> None:
        agent = self.agent
        request_id = frame.id
        if request_id in self._waiting:
            self._refuse(connection, request_id, f"A turn with request id {request_id!r} is already running")
            return
        if len(self._waiting) >= MAX_WAITING_TURNS:
            self._refuse(connection, request_id, f"Too many turns are waiting ({MAX_WAITING_TURNS}); "
                                                 "send again when one has finished")
            return
        try:
            for t in frame.client_tools or ():
                client_tool(t.name, description=t.description, input_schema=t.parameters)
        except ConfigurationError as exc:
            self._refuse(connection, request_id, f"clientTools: {exc}")
            return
        session = agent.session
        live = agent.streams.live
        kinds = client_tool_kinds(self.agent, frame.client_tools)
        try:
            incoming = reconcile(frame.messages, session, kinds=kinds, reserved=agent.reserved_metadata_keys,
                                 in_flight=live.message_id if live is not None else None)
        except (Refused, InvalidMessage) as exc:
            self._refuse(connection, request_id, str(exc))
            return
        client_tools = self._usable_client_tools(connection, frame.client_tools, kinds)
        policy = self._policy()
        submit: Submit | None = None
        if not frame.is_regeneration:
            busy = agent.is_busy() or bool(self._waiting)
            submit = self._admission.accept(policy, busy=busy, generation=agent.turn_queue.generation)
            if submit is None:  # "drop": not saved, not run; the sender gets the server's transcript
                connection.send(self._transcript_for(connection.id, session.history_json()))
                connection.send_frame(ChatResponse(id=request_id, done=True))
                return
        remember_request(agent, client_tools, frame.body)
        agent.streams.clear_terminal()  # a new turn supersedes an old failure
        new_users = tuple(m.id for m in incoming.fresh if m.role == "user")
        last_user = next((incoming.ids[i] for i in reversed(range(len(incoming.ids)))
                          if _role_at(frame.messages, i) == "user"), None)
        parent_id = None
        if frame.is_regeneration and incoming.ids:
            last = incoming.ids[-1]
            if session.get(last) is not None or session.get_message(last) is not None:
                parent_id = last  # the reply becomes a new branch under this message

        def new_messages(history: list[Message]) -> list[Message]:
            self._queued.pop(request_id, None)  # saved now, at the front of the queue
            return incoming.new_messages(session)  # minus any saved while this turn waited

        self._waiting[request_id] = new_users or ((last_user,) if last_user else ())
        self._pre_stream[request_id] = None
        if incoming.fresh:
            self._queued[request_id] = (connection.id, incoming.fresh)
        turn = TurnRequest(request_id=request_id, messages=new_messages, client_tools=stored_client_tools(agent),
                           body=frame.body or None, parent_id=parent_id, sender=connection.id,
                           admit=self._admission.admit(policy, submit) if submit is not None else None,
                           when_busy="steer" if submit is not None and policy.strategy == "steer" else "queue",
                           trigger="ws-chat")
        sender = connection.id

        async def run() -> None:
            result: TurnResult | None = None
            try:
                result = await agent.run(turn)
            except Exception as exc:  # run_turn reports failures itself; this is a bug in it
                log.exception("turn %s crashed", request_id)
                self.connections.broadcast(encode_frame(ChatResponse(id=request_id, body=f"Internal error: {exc}",
                                                                     done=True, error=True)))
            finally:
                self._waiting.pop(request_id, None)
                self._pre_stream.pop(request_id, None)
                self._queued.pop(request_id, None)
                if submit is not None:
                    self._admission.finished(submit)
                self._release_parked_if_idle()
            if result is not None and (result.status == "skipped" or result.request_id != request_id):
                # superseded by a newer message (or answered by one steered with it), or made
                # stale by a clear: only its sender hears
                self._send_to(sender, ChatResponse(id=request_id, done=True))

        self.spawn(run)

    def _usable_client_tools(self, connection: Connection, client_tools: Sequence[ClientToolSchema] | None,
                             kinds: ToolKinds) -> list[ClientToolSchema] | None:
        """The browser's tool schemas minus those a server tool shadows (the sender is told)."""
        if client_tools is None:
            return None
        kept, ignored = split_client_tools(client_tools, kinds.server)
        for name in ignored:
            connection.refusals.refused(f"client tool {name!r}", "a server tool has that name; ignored")
            connection.send_frame(ProtocolErrorFrame(shadowed_message(name)))
        return kept

    def _cancel(self, request_id: str) -> None:
        agent = self.agent
        if agent.cancel_chat(request_id) or agent.continuations.cancel(request_id):
            return
        running = agent.continuations.running
        if request_id in self._waiting or (running is not None and running.request_id == request_id):
            agent.cancellations.cancel_pending(request_id)  # admitted, not started yet

    async def _clear(self, connection: Connection) -> None:
        self._clearing = True
        try:
            await self.agent.clear_messages()
        finally:
            self._clearing = False
        self._admission.reset()
        self._pre_stream.clear()
        self._queued.clear()
        self.awaiting_ack.clear()
        self._release_parked()
        self.connections.broadcast(encode_frame(ChatClear()), exclude=connection.id)

    async def _tool_result(self, connection: Connection, frame: ToolResult) -> None:
        agent = self.agent
        try:
            updated = await agent.tool_updates.client_result(
                frame.tool_call_id, lambda: client_tool_kinds(self.agent, frame.client_tools), output=frame.output,
                error_text=frame.error_text, is_error=frame.state == "output-error")
        except Refused as exc:
            self._refuse_answer(connection, exc)
            return
        if frame.client_tools:  # a non-empty list replaces the stored one (once the result is taken)
            kinds = client_tool_kinds(agent, frame.client_tools)
            kept = self._usable_client_tools(connection, frame.client_tools, kinds)
            remember_request(agent, kept, None, replace_body=False)
        if updated is not None and frame.auto_continue:
            agent.continuations.request(connection.id)

    async def _tool_approval(self, connection: Connection, frame: ToolApproval) -> None:
        agent = self.agent
        try:
            updated = await agent.tool_updates.client_approval(frame.tool_call_id, frame.approved)
        except Refused as exc:
            self._refuse_answer(connection, exc)
            return
        if updated is not None and frame.auto_continue:
            agent.continuations.request(connection.id)

    def _refuse_answer(self, connection: Connection, refused: Refused) -> None:
        connection.refusals.refused(f"an answer to {type(self.agent).__name__}", refused)
        connection.send_frame(ProtocolErrorFrame(str(refused)))
        # The stock client shows its answer before the server takes it: give the sender the
        # server's copy back, or its next request would resend the refused claim.
        found = find_part(self.agent.session.history(), refused.tool_call_id or "", ANY_TOOL_STATE)
        if found is not None:
            connection.send_frame(MessageUpdated(found[0]))

    def _send_to(self, connection_id: str, frame: ChatResponse) -> None:
        text = encode_frame(frame)
        for connection in self.connections:
            if connection.id == connection_id:
                connection.send(text)

    # ---- events out ------------------------------------------------------------------------------

    def _broadcast_chunk(self, frame: ChatResponse) -> None:
        self.connections.broadcast(encode_frame(frame), exclude=self.awaiting_ack or None)

    def _message_ids(self, request_id: str, from_event: Sequence[str]) -> tuple[str, ...]:
        return tuple(from_event) or self._waiting.get(request_id, ())

    def _transcript_json(self, messages: Sequence[Message]) -> list[bytes]:
        session = self.agent.session
        path = session.history()
        if len(messages) == len(path) and all(map(operator.is_, messages, path)):
            return session.history_json()  # stored JSON, not re-encoded
        return [m.dumps() for m in messages]

    def _transcript_for(self, connection_id: str, message_json: list[bytes], *, connect: bool = False) -> str:
        """The transcript as `connection_id` must see it: with its own new messages that wait in
        the queue (saved when their turn starts) at the end, as the client shows them. Without
        them a transcript sent meanwhile would take the message off the sender's screen."""
        own = [m for sender, fresh in self._queued.values() if sender == connection_id for m in fresh]
        if own:
            message_json = [*message_json, *(m.dumps() for m in own)]
        return encode_transcript(message_json, connect=connect)

    def _broadcast_transcript(self, message_json: list[bytes], *, exclude: str | None = None) -> None:
        senders = {sender for sender, _ in self._queued.values()}
        text = encode_transcript(message_json)
        for connection in self.connections:
            if connection.id == exclude:
                continue
            connection.send(self._transcript_for(connection.id, message_json) if connection.id in senders else text)

    async def _on_event(self, event: TurnEvent) -> None:
        match event:
            case ChunkEvent(request_id=request_id, seq=seq, continuation=continuation):
                body = self.agent.streams.body_of(event)
                self._broadcast_chunk(ChatResponse(id=request_id, body=body, seq=seq, continuation=continuation))
            case TurnStarted(request_id=request_id, continuation=continuation):
                self._pre_stream.pop(request_id, None)
                if continuation:
                    self.agent.continuations.mark_streaming(request_id)
                self._offer_to_parked(request_id)
            case TurnFailed(request_id=request_id, error=text, continuation=continuation, user_message_ids=ids):
                self._failed.add(request_id)
                self.connections.broadcast(encode_frame(ChatResponse(
                    id=request_id, body=text, error=True, continuation=continuation,
                    message_ids=None if continuation else self._message_ids(request_id, ids))))
            case TranscriptChanged(messages=messages, exclude=exclude):
                if self._clearing and not messages:
                    return  # a client's clear: the others get cf_agent_chat_clear instead
                self._broadcast_transcript(self._transcript_json(messages), exclude=exclude)
            case MessageChanged(message=message):
                self.connections.broadcast(encode_frame(MessageUpdated(message)))
            case AgentToolEvent(sequence=sequence, event=payload, parent_tool_call_id=parent):
                self.connections.broadcast(orjson.dumps(agent_tool_event(sequence, payload, parent)).decode())
            case TurnFinished():
                self._finish(event)
            case Recovering(request_id=request_id, recovering=recovering):
                self.connections.broadcast(encode_frame(ChatRecovering(recovering, request_id)))

    def _offer_to_parked(self, request_id: str) -> None:
        parked, self.parked = self.parked, set()
        if not parked:
            return
        frame = encode_frame(StreamResuming(request_id))
        for connection in self.connections:
            if connection.id in parked:
                connection.send(frame)
                self.awaiting_ack.add(connection.id)

    def _finish(self, event: TurnFinished) -> None:
        request_id = event.request_id
        failed_mid_stream = request_id in self._failed
        self._failed.discard(request_id)
        self._pre_stream.pop(request_id, None)
        if event.outcome == "skipped":  # the chat was cleared while it waited
            frame = ChatResponse(id=request_id, done=True)
        elif event.outcome == "error" and not failed_mid_stream:  # failed before it streamed
            frame = ChatResponse(id=request_id, body=event.error or "The turn failed", done=True, error=True)
        else:
            frame = ChatResponse(
                id=request_id, done=True, outcome=event.outcome, continuation=event.continuation,
                message_ids=None if event.continuation else self._message_ids(request_id, event.user_message_ids))
        # The stream is over: connections still to ACK it get the end now, and the lone
        # {"done":true,"replay":true} when their ACK arrives.
        self.awaiting_ack.clear()
        self.connections.broadcast(encode_frame(frame))
        self._release_parked_if_idle()
        self.agent.continuations.poke()  # a waiting continuation may start now


def _role_at(messages: Sequence[Message], index: int) -> object:
    role_at = getattr(messages, "role_at", None)
    return role_at(index) if role_at is not None else messages[index].role
