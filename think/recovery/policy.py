"""What chat recovery is configured with and what it tells the agent's hooks: the budgets
(`ChatRecoveryPolicy`), `on_chat_recovery`'s context and answer, `on_exhausted`'s context, and the
outcome kept per interrupted fiber. Plain values; `think.recovery.engine` acts on them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from think.messages import JSONObject, Message

RecoveryKind = Literal["retry", "continue"]
ExhaustionReason = Literal["max_attempts_exceeded", "no_progress_timeout", "work_budget_exceeded",
                           "recovery_aborted"]


@dataclass(frozen=True, slots=True)
class ChatRecoveryPolicy:
    """Budgets of chat recovery (`Think.chat_recovery`)."""

    enabled: bool = True
    max_attempts: int = 10
    """Recoveries of one incident (one root turn) before it is given up."""
    no_progress_timeout: float = 300.0
    """Seconds without forward progress (new content or tool steps) before it is given up."""
    max_recovery_work: int = 1000
    """Content parts and tool steps all attempts of one incident may stream."""
    backoff: float = 0.5
    """Seconds before the first recovery attempt; doubled per attempt, at most `max_backoff`."""
    max_backoff: float = 10.0
    transient_backoff: float = 1.0
    """Seconds before retrying a turn whose model call failed with an error `classify_chat_error`
    calls `"transient"` or `"rate_limit"`; doubled per attempt, at most `max_transient_backoff`."""
    max_transient_backoff: float = 30.0
    terminal_message: str = "The assistant was interrupted and could not recover. Please try again."
    wake_after: float = 10.0
    """The keep-alive alarm's horizon: after a crash the agent is woken (and its turn recovered)
    within this many seconds of the restart, with no client connected. 0 turns the alarm off."""
    should_keep_recovering: Callable[[RecoveryContext], bool | Awaitable[bool]] | None = None
    """Asked before each attempt from the second on (after the budgets held); False gives the
    incident up with `recovery_aborted`."""

    def delay(self, attempt: int, *, transient: bool = False) -> float:
        """Seconds before recovery attempt `attempt` (1, 2, …): after a crash or a stall, or
        (`transient`) after a transient or rate-limit error of the model."""
        first, most = (self.transient_backoff, self.max_transient_backoff) if transient else (
            self.backoff, self.max_backoff)
        return float(min(most, first * (2 ** max(0, attempt - 1))))


@dataclass(frozen=True, slots=True)
class RecoveryDecision:
    """What `on_chat_recovery` returns (a `{"persist": …, "continue": …}` dict works too)."""

    persist: bool = True
    """Keep the partial reply (settled tool results are kept either way)."""
    continue_: bool = True
    """Run the recovery turn; False ends the turn with a terminal error."""


@dataclass(frozen=True, slots=True)
class RecoveryContext:
    """What `on_chat_recovery` is told (reference §4.8)."""

    incident_id: str
    recovery_root_request_id: str
    attempt: int
    max_attempts: int
    recovery_kind: RecoveryKind
    stream_id: str
    request_id: str
    partial_text: str
    partial_parts: tuple[Any, ...]
    recovery_data: Any
    messages: tuple[Message, ...]
    last_body: JSONObject | None
    last_client_tools: tuple[JSONObject, ...]
    created_at: float


@dataclass(frozen=True, slots=True)
class ExhaustedContext:
    """What `on_exhausted` is told when an incident is given up."""

    reason: ExhaustionReason
    terminal_message: str
    recovery_root_request_id: str
    request_id: str
    attempt: int
    partial_text: str
    recovery_data: Any


@dataclass(frozen=True, slots=True)
class RecoveryOutcome:
    """What recovery did with one interrupted fiber (kept in `ChatRecovery.outcomes`)."""

    request_id: str
    action: Literal["ended", "parked", "retry", "continue", "declined", "exhausted", "skipped"]
    attempt: int = 0
    reason: str | None = None
    recovery_request_id: str | None = None


def decision_of(value: Any) -> RecoveryDecision:
    """What `on_chat_recovery` returned, as a `RecoveryDecision` (None: the default)."""
    if value is None:
        return RecoveryDecision()
    if isinstance(value, RecoveryDecision):
        return value
    if isinstance(value, dict):
        return RecoveryDecision(persist=bool(value.get("persist", True)),
                                continue_=bool(value.get("continue", value.get("continue_", True))))
    raise TypeError(f"on_chat_recovery must return a RecoveryDecision, a dict or None, not {type(value).__name__}")
