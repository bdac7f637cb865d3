"""The resume handshake half of `ChatChannel` (a mixin): what a (re)connecting tab is offered
and what its ACK gets. The decisions are `think.server.resume`'s; the replay is `replay.py`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from think.protocol.codec import encode_frame
from think.protocol.frames import ChatRecovering, ChatResponse, StreamResumeNone
from think.server.replay import orphan_done, send_replay
from think.server.resume import ActiveStream, PendingTurn, ProbeAnswer, Situation, plan_ack

if TYPE_CHECKING:
    from think.agent import Think
    from think.server.connection import Connection, Connections


class ResumeHandshake:
    """The channel's resume state and the handshake (see `ChatChannel`)."""

    agent: Think
    connections: Connections
    awaiting_ack: set[str]
    parked: set[str]
    _pre_stream: dict[str, None]

    if TYPE_CHECKING:  # ChatChannel's own
        def _broadcast_transcript(self, message_json: list[bytes], *, exclude: str | None = None) -> None: ...

    def _situation(self) -> Situation:
        agent = self.agent
        streams, continuations = agent.streams, agent.continuations
        active: ActiveStream | None = None
        running = continuations.running
        if streams.live is not None:
            live = streams.live
            owner = running.owner if running is not None and running.request_id == live.request_id else None
            active = ActiveStream(live.request_id, live.continuation, owner)
        elif streams.orphan is not None:
            active = ActiveStream(streams.orphan.request_id, streams.orphan.continuation, orphaned=True)
        waiting = continuations.pending or (running if running is not None and not running.streaming else None)
        terminal = streams.terminal
        return Situation(
            active=active,
            continuation=PendingTurn(waiting.request_id, waiting.owner) if waiting is not None else None,
            terminal=terminal.request_id if terminal is not None else None,
            pre_stream=next(reversed(self._pre_stream), None),
            connected=frozenset(c.id for c in self.connections))

    def _apply(self, connection: Connection, answer: ProbeAnswer) -> None:
        connection.send_frame(answer.frame)
        if answer.action == "await-ack":
            self.awaiting_ack.add(connection.id)
        elif answer.action == "park":
            self.parked.add(connection.id)

    def _ack(self, connection: Connection, request_id: str) -> None:
        self.awaiting_ack.discard(connection.id)
        streams = self.agent.streams
        match plan_ack(self._situation(), request_id):
            case "replay-live":
                send_replay(connection, self.agent, request_id)
                connection.send_frame(ChatResponse(id=request_id, replay=True, replay_complete=True))
            case "replay-orphan":
                send_replay(connection, self.agent, request_id)
                connection.send_frame(orphan_done(self.agent, request_id))
                streams.settle_orphan(request_id)  # its partial was saved when the agent started
                self._broadcast_transcript(self.agent.session.history_json())
                if (recovering := self.agent.recovery.recovering) is not None:
                    connection.send_frame(ChatRecovering(True, recovering))  # after the stream it recovers
            case "replay-failed":
                terminal = streams.terminal
                send_replay(connection, self.agent, request_id)
                connection.send_frame(ChatResponse(id=request_id, body=terminal.body if terminal else "",
                                                   done=True, error=True))
            case "done":
                connection.send_frame(ChatResponse(id=request_id, done=True, replay=True))

    def _release_parked_if_idle(self) -> None:
        if not self.parked or self._pre_stream:
            return
        continuations = self.agent.continuations
        if continuations.pending is not None or (continuations.running is not None
                                                 and not continuations.running.streaming):
            return
        self._release_parked()

    def _release_parked(self) -> None:
        parked, self.parked = self.parked, set()
        if parked:
            frame = encode_frame(StreamResumeNone())
            for connection in self.connections:
                if connection.id in parked:
                    connection.send(frame)

