"""The resume handshake's decisions, sans-I/O: what a probe or an ACK gets (Think §2.7).

`answer_probe` is the decision table for `cf_agent_stream_resume_request`, first matching row wins:

| situation                                                          | answer                               |
|--------------------------------------------------------------------|--------------------------------------|
| a continuation streams, owned by another connection still open     | `resume_none` `continuation-owned`   |
| a stream is active (a turn streams, or a restart orphaned one)     | `resuming` (the connection awaits ACK) |
| a continuation is pending, owned by this connection or by nobody   | `pending` (the connection is parked) |
| the last turn failed (a terminal record)                           | `resuming` with that turn's id       |
| a chat request was accepted and has not started streaming          | `pending` (parked)                   |
| otherwise                                                          | `resume_none` `idle`                 |

A connection whose owner has gone counts as owned by nobody. `plan_ack` says what an ACK gets:
the active stream replayed (then `replayComplete`, or `done` for an orphan), a failed turn
replayed and re-failed, or a lone `{"done":true,"replay":true}` (what the current TypeScript
server sends when the stream ended before the ACK; it does not replay finished streams).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from think.protocol.frames import ServerFrame, StreamPending, StreamResumeNone, StreamResuming


@dataclass(frozen=True, slots=True)
class ActiveStream:
    request_id: str
    continuation: bool = False
    owner: str | None = None
    """The connection that asked for this continuation (None: nobody, or not a continuation)."""
    orphaned: bool = False
    """A restart interrupted it: nothing produces it any more."""


@dataclass(frozen=True, slots=True)
class PendingTurn:
    request_id: str
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class Situation:
    """What the server knows when a probe or an ACK arrives."""

    active: ActiveStream | None = None
    continuation: PendingTurn | None = None
    """A continuation asked for (or queued) whose stream has not started."""
    terminal: str | None = None
    """The request id of the last turn, if it failed."""
    pre_stream: str | None = None
    """The newest chat request accepted that has not started streaming."""
    connected: frozenset[str] = frozenset()
    """Ids of the open connections."""


Action = Literal["none", "await-ack", "park"]


@dataclass(frozen=True, slots=True)
class ProbeAnswer:
    frame: ServerFrame
    action: Action
    """`await-ack`: excluded from live chunks until it ACKs; `park`: told when a stream starts."""


def _owned_elsewhere(owner: str | None, connection_id: str, connected: frozenset[str]) -> bool:
    return owner is not None and owner != connection_id and owner in connected


def answer_probe(s: Situation, connection_id: str, probe_id: str | None) -> ProbeAnswer:
    """The answer to `cf_agent_stream_resume_request` (see the module docstring)."""
    active = s.active
    if active is not None:
        if active.continuation and _owned_elsewhere(active.owner, connection_id, s.connected):
            return ProbeAnswer(StreamResumeNone("continuation-owned", probe_id), "none")
        return ProbeAnswer(StreamResuming(active.request_id, probe_id), "await-ack")
    pending = s.continuation
    if pending is not None and not _owned_elsewhere(pending.owner, connection_id, s.connected):
        return ProbeAnswer(StreamPending(pending.request_id, probe_id), "park")
    if s.terminal is not None:
        return ProbeAnswer(StreamResuming(s.terminal, probe_id), "await-ack")
    if s.pre_stream is not None:
        return ProbeAnswer(StreamPending(s.pre_stream, probe_id), "park")
    return ProbeAnswer(StreamResumeNone("idle", probe_id), "none")


def greeting(s: Situation) -> ProbeAnswer | None:
    """The unprompted resume frame a new connection gets first, if any (Think §1.2): the active
    stream's id (the connection then awaits its ACK), or `pending` for an accepted turn that has
    not started streaming (the connection is parked)."""
    if s.active is not None:
        return ProbeAnswer(StreamResuming(s.active.request_id), "await-ack")
    waiting = s.continuation.request_id if s.continuation is not None else s.pre_stream
    if waiting is not None:
        return ProbeAnswer(StreamPending(waiting), "park")
    return None


AckPlan = Literal["replay-live", "replay-orphan", "replay-failed", "done"]


def plan_ack(s: Situation, request_id: str) -> AckPlan:
    """What `cf_agent_stream_resume_ack` for `request_id` gets.

    * `replay-live`: the active stream's chunks, then `replayComplete`; live frames follow;
    * `replay-orphan`: an orphaned stream's chunks, then `{"done":true,"replay":true}`; it is settled;
    * `replay-failed`: the failed turn's chunks, then its error as `{"done":true,"error":true}`;
    * `done`: `{"done":true,"replay":true}` alone: the stream is not the active one, it ended
      before the ACK (an interrupted stream offered on connect whose recovery started meanwhile,
      say); the client's turn for it ends, and the active stream is offered on its own.
    """
    if s.active is not None:
        if s.active.request_id != request_id:
            return "done"
        return "replay-orphan" if s.active.orphaned else "replay-live"
    if s.terminal == request_id:
        return "replay-failed"
    return "done"
