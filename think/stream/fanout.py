"""`Fanout`: every chunk of every turn, delivered to whoever listens (connections, tests, parents).

The turn publishes `TurnEvent`s in order; listeners are called inline, in subscription order.
A listener that raises is dropped from that event only (and logged): one broken socket must not
stop a turn.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from think.messages import JSONObject, Message

log = logging.getLogger("think.stream")

TurnOutcome = Literal["completed", "aborted", "error", "skipped"]


@dataclass(frozen=True, slots=True)
class ChunkEvent:
    """One UI message chunk of a running turn."""

    request_id: str
    seq: int
    chunk: JSONObject
    continuation: bool = False


@dataclass(frozen=True, slots=True)
class TurnStarted:
    request_id: str
    continuation: bool = False
    user_message_ids: tuple[str, ...] = ()
    extends: str | None = None
    """The stored assistant message a recovery continuation streams into (see `TurnRequest.extend`)."""


@dataclass(frozen=True, slots=True)
class TurnFailed:
    """The model or the turn failed mid-stream; `error` is the text clients see (after
    `on_chat_error`). Published before the partial reply is persisted and the turn finishes."""

    request_id: str
    error: str
    continuation: bool = False
    user_message_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """The turn is over and its reply is persisted."""

    request_id: str
    outcome: TurnOutcome
    message: Message | None = None
    error: str | None = None
    continuation: bool = False
    user_message_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TranscriptChanged:
    """The active transcript changed (`exclude` is the connection that caused it, if any)."""

    messages: tuple[Message, ...]
    exclude: str | None = None


@dataclass(frozen=True, slots=True)
class SessionChanged:
    """A session was written to or is being compacted (the `cf_agent_session` frame).

    `phase` is `"compacting"` while a summary is being made, else `"idle"`; `token_estimate` is the
    estimated size of what the model would see now; `token_threshold` is `compact_after`'s value
    (None without automatic compaction).
    """

    phase: Literal["idle", "compacting"]
    token_estimate: int
    token_threshold: int | None = None
    session_id: str = ""


@dataclass(frozen=True, slots=True)
class MessageChanged:
    """A stored message changed outside a reply's own stream: a tool result or an approval was
    applied to it, or a later turn wrote the output of a call it holds (`cf_agent_message_updated`)."""

    message: Message


@dataclass(frozen=True, slots=True)
class AgentToolEvent:
    """Progress of a child agent run as a tool (the `agent-tool-event` frame, reference §2.9).

    `event` is `{"kind": "started" | "chunk" | "finished" | "error" | "aborted", "runId": …, …}`;
    `sequence` counts the events of one run from 0.
    """

    sequence: int
    event: JSONObject
    parent_tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Recovering:
    """An interrupted turn is being recovered (`recovering=True`) or no longer is (the
    `cf_agent_chat_recovering` frame); `request_id` is the interrupted turn's."""

    request_id: str
    recovering: bool


TurnEvent = (ChunkEvent | TurnStarted | TurnFailed | TurnFinished | TranscriptChanged | SessionChanged
             | MessageChanged | AgentToolEvent | Recovering)
Listener = Callable[[TurnEvent], Awaitable[None]]


@dataclass
class Fanout:
    listeners: list[Listener] = field(default_factory=list)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add a listener; returns the function that removes it."""
        self.listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self.listeners:
                self.listeners.remove(listener)

        return unsubscribe

    async def publish(self, event: TurnEvent) -> None:
        for listener in tuple(self.listeners):
            try:
                await listener(event)
            except Exception:
                log.exception("a turn listener failed; the turn goes on")
