"""The values a turn is made of: what was asked (`TurnRequest`) and how it ended (`TurnResult`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from think.messages import JSONObject, Message
from think.tools.tool import Tool

if TYPE_CHECKING:
    from think.usage.meter import TurnUsage

TurnStatus = Literal["completed", "error", "aborted", "skipped"]
WhenBusy = Literal["queue", "steer"]
TurnTrigger = Literal["ws-chat", "programmatic", "submission", "auto-continuation", "recovery-continue",
                      "recovery-retry"]
"""What started a turn (the original's `TurnTrigger`). Ours has no `rpc`, `agent-tool` or
`scheduled` of its own: RPC methods and parent agents use the programmatic APIs, and scheduled
tasks are submissions."""


def _trace_parent() -> Any:
    from think.observe.propagation import parent_for_turn

    return parent_for_turn()


MessagesFn = Callable[[list[Message]], Sequence[Message] | None]
"""Returns the turn's new messages at the head of the queue; None withdraws the turn (`skipped`)."""


@dataclass(frozen=True, kw_only=True)
class TurnRequest:
    """One admitted chat turn."""

    request_id: str
    """Chosen by the client (or generated); the key for cancellation and stream resume."""
    messages: Sequence[Message] | MessagesFn = ()
    """New messages this turn saves before the model runs, or a function of the transcript at
    the head of the queue that returns them."""
    continuation: bool = False
    """Continue the last assistant message instead of answering a new user message."""
    extend: bool = False
    """A recovery continuation: the reply streams into the newest assistant message (the partial
    a crash cut short; its open text part is closed) instead of becoming a message of its own,
    so the answer stays one message. Only with `continuation`."""
    body: JSONObject | None = None
    """Custom fields from the client's request body, for `before_turn`."""
    client_tools: Sequence[Tool] = ()
    """Tools the caller executes itself for this turn."""
    parent_id: str | None = None
    """Where the reply hangs in the tree (regeneration); default: the newest message."""
    sender: str | None = None
    """The connection that asked, if any (it does not get its own messages echoed)."""
    session_id: str = ""
    """The session the turn reads and writes (`""`: the root session, the chat transcript)."""
    admit: Callable[[], Awaitable[bool]] | None = None
    """Asked at the front of the queue, once the turn's messages are saved: False skips the model
    call (a newer message superseded this one; see `think.turns.concurrency`)."""
    trigger: TurnTrigger = "programmatic"
    """What started the turn; every hook context carries it."""
    when_busy: WhenBusy = "queue"
    """While a turn of the same session runs: wait for it (`"queue"`) or join it at its next step
    boundary (`"steer"`, see `think.turns.steer`)."""
    trace_parent: Any = field(default_factory=_trace_parent, compare=False, repr=False)
    """The trace context of the request that asked for this turn when it came from another process
    (an HTTP request's `traceparent`): the turn's span joins that trace (`think.observe.propagation`)."""


@dataclass(kw_only=True)
class ActiveTurn:
    """The turn running now (`Think.active_turn`)."""

    request_id: str
    session_id: str
    trigger: TurnTrigger
    continuation: bool
    signal: Any
    """The turn's cancel signal (an `anyio.Event`, set when the turn is stopped)."""
    message_metadata: JSONObject = field(default_factory=dict)
    """Server metadata for the reply (`Think.message_metadata`), merged in when it is persisted."""


@dataclass(frozen=True, kw_only=True)
class TurnResult:
    """How a turn ended. `message` is the persisted reply (None if there was none)."""

    request_id: str
    status: TurnStatus
    error: str | None = None
    message: Message | None = None
    continuation: bool = False
    user_message_ids: tuple[str, ...] = field(default=())
    attachments: tuple[JSONObject, ...] = ()
    """Reply attachments the turn's tools made (`ToolContext.attach_reply`)."""
    output: Any = None
    """The structured answer, for a turn with `TurnConfig.output` (None if it gave none)."""
    recovering: bool = False
    """The stream stalled (status `aborted`) and recovery goes on with the turn under a new
    request id: the answer comes later, in the transcript (see `think.recovery`)."""
    steered: bool = False
    """The turn stopped at a step boundary for a user message steered into it; the answer goes
    on in the steered turn (see `think.turns.steer`)."""
    usage: TurnUsage | None = None
    """The tokens (and, where the price is known, the cost) of this turn's model calls; None for a
    turn that made none (skipped, failed before the model). See `think.usage`."""
