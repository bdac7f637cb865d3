"""Hook contexts and decisions: what the loop tells a hook, and what a hook may answer.

`Think` implements every hook as an overridable method with a do-nothing default; the loop sees
only the `LoopHooks` protocol, so it can run (and be tested) without an agent.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import anyio

from think.messages import JSONObject
from think.models.base import Model, ModelMessage, ToolChoice
from think.models.events import FinishReason, Usage

if TYPE_CHECKING:
    from think.tools.run import ToolResult
    from think.tools.tool import Tool


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """A tool call as the model made it (input already parsed)."""

    id: str
    name: str
    input: JSONObject


@dataclass(frozen=True, kw_only=True)
class StepContext:
    """Passed to `before_step`."""

    step_number: int
    steps: Sequence[StepRecord]
    model: Model
    system: str
    messages: Sequence[ModelMessage]
    request_id: str = ""
    trigger: str = ""
    """What started the turn (`think.turns.turn.TurnTrigger`: `"ws-chat"`, `"submission"`, …)."""
    signal: anyio.Event | None = None
    """The turn's cancel signal: set when the turn is stopped."""


@dataclass(frozen=True, kw_only=True)
class StepConfig:
    """Per-step overrides `before_step` may return. `None` keeps the turn's value."""

    model: Model | str | None = None
    system: str | None = None
    messages: Sequence[ModelMessage] | None = None
    active_tools: Sequence[str] | None = None
    tool_choice: ToolChoice | None = None
    provider_options: JSONObject | None = None


class _CallFields:
    """`tool_name`, `input` and `tool_call_id` of `call`, at the top level as the original has them."""

    call: ToolCall

    @property
    def tool_name(self) -> str:
        return self.call.name

    @property
    def input(self) -> JSONObject:
        return self.call.input

    @property
    def tool_call_id(self) -> str:
        return self.call.id


@dataclass(frozen=True, kw_only=True)
class ToolCallContext(_CallFields):
    """Passed to `before_tool_call`."""

    call: ToolCall
    step_number: int
    messages: Sequence[ModelMessage]
    request_id: str = ""
    trigger: str = ""
    signal: anyio.Event | None = None
    """The turn's cancel signal: set when the turn is stopped (`cancel_chat`, a clear, …)."""


@dataclass(frozen=True)
class Allow:
    """Run the tool; with `input`, run it with that input instead of the model's."""

    input: JSONObject | None = None


@dataclass(frozen=True)
class Block:
    """Do not run the tool; the model sees `reason` (or a default sentence) as its output."""

    reason: str | None = None


@dataclass(frozen=True)
class Substitute:
    """Do not run the tool; `output` is its result."""

    output: Any
    input: JSONObject | None = None


ToolDecision: TypeAlias = Allow | Block | Substitute


@dataclass(frozen=True, kw_only=True)
class ToolCallResultContext(_CallFields):
    """Passed to `after_tool_call`: the call and how it ended."""

    call: ToolCall
    step_number: int
    duration: float
    """How long the call ran, in seconds."""
    success: bool
    output: Any = None
    error: str | None = None
    request_id: str = ""
    trigger: str = ""
    signal: anyio.Event | None = None

    @property
    def duration_ms(self) -> float:
        """Deprecated: `duration` in milliseconds (with a `DeprecationWarning`)."""
        warnings.warn("ToolCallResultContext.duration_ms is deprecated; use duration (seconds)",
                      DeprecationWarning, stacklevel=2)
        return self.duration * 1000


@dataclass(kw_only=True)
class StepRecord:
    """One model step: what it said, which tools it called, and how they ended."""

    step_number: int
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    finish_reason: FinishReason = "other"
    usage: Usage | None = None
    model: str | None = None
    """The id of the model that ran the step (a `before_step` hook may have changed it)."""


StopCondition: TypeAlias = Callable[[Sequence[StepRecord]], "bool | Awaitable[bool]"]
"""`stop_when`: a predicate over the steps so far; True ends the turn after the current step."""


def step_count_is(count: int) -> StopCondition:
    """Stop once `count` steps have run (the AI SDK's `stepCountIs`)."""
    return lambda steps: len(steps) >= count


def has_tool_call(name: str) -> StopCondition:
    """Stop after a step in which the model called the tool `name` (the AI SDK's `hasToolCall`)."""
    return lambda steps: bool(steps) and any(call.name == name for call in steps[-1].tool_calls)


class LoopHooks(Protocol):
    """What the loop calls while it runs. Every method may be a no-op."""

    async def before_step(self, ctx: StepContext) -> StepConfig | None: ...
    async def before_tool_call(self, ctx: ToolCallContext) -> ToolDecision | None: ...
    async def after_tool_call(self, ctx: ToolCallResultContext) -> None: ...
    async def on_step_finish(self, step: StepRecord) -> None: ...
    async def on_chunk(self, chunk: JSONObject) -> None: ...


class NoHooks:
    """`LoopHooks` that do nothing."""

    async def before_step(self, ctx: StepContext) -> StepConfig | None:
        return None

    async def before_tool_call(self, ctx: ToolCallContext) -> ToolDecision | None:
        return None

    async def after_tool_call(self, ctx: ToolCallResultContext) -> None:
        return None

    async def on_step_finish(self, step: StepRecord) -> None:
        return None

    async def on_chunk(self, chunk: JSONObject) -> None:
        return None


@dataclass(frozen=True, kw_only=True)
class TurnContext:
    """Passed to `before_turn`: what the turn is about to send to the model."""

    system: str
    messages: Sequence[ModelMessage]
    tools: Mapping[str, Tool]
    model: Model
    continuation: bool = False
    body: JSONObject | None = None
    request_id: str = ""
    session_id: str = ""
    """The session the turn is for (`""`: the root session, the chat transcript)."""
    trigger: str = ""
    """What started the turn (`think.turns.turn.TurnTrigger`: `"ws-chat"`, `"submission"`, …)."""
    signal: anyio.Event | None = None
    """The turn's cancel signal: set when the turn is stopped."""


@dataclass(frozen=True, kw_only=True)
class TurnConfig:
    """Per-turn overrides `before_turn` may return. `None` keeps the agent's value.

    `tools` are added to the turn's tools; `active_tools` then limits which ones the model sees.
    Most other fields are model settings for every step of this turn; `stop_when`, `max_retries`
    and `output` shape the loop (see docs/concepts/hooks.md).
    """

    model: Model | str | None = None
    system: str | None = None
    messages: Sequence[ModelMessage] | None = None
    tools: Sequence[Tool] | Mapping[str, Tool] | None = None
    active_tools: Sequence[str] | None = None
    tool_choice: ToolChoice | None = None
    max_steps: int | None = None
    send_reasoning: bool | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop_sequences: Sequence[str] | None = None
    seed: int | None = None
    headers: Mapping[str, str] | None = None
    provider_options: JSONObject | None = None
    timeout: float | None = None
    """Seconds each model call may take (passed to the model as `ModelSettings.timeout`)."""
    stop_when: StopCondition | Sequence[StopCondition] | None = None
    """End the turn after a step for which any condition is true; added to the step cap."""
    max_retries: int | None = None
    """Retries of a model call that fails before any content with a retryable error (429, 5xx);
    default 2, with exponential backoff."""
    output: Any = None
    """Structured output: a pydantic model class or a JSON Schema (a dict). The model answers by
    calling the `final_answer` tool; `TurnResult.output` is the parsed answer. See `think.turns.output`."""
    stream_stall_timeout: float | None = None
    """Stream-stall watchdog for this turn, in seconds (0: off; None: the agent's setting). A stall keeps
    the partial reply and goes through chat recovery."""
    stream_stall_timeout_ms: int | None = None
    """Deprecated: `stream_stall_timeout` in milliseconds (converted, with a `DeprecationWarning`)."""

    def __post_init__(self) -> None:
        if self.stream_stall_timeout_ms is not None and self.stream_stall_timeout is None:
            warnings.warn("TurnConfig(stream_stall_timeout_ms=…) is deprecated; use stream_stall_timeout in "
                          "seconds", DeprecationWarning, stacklevel=3)
            object.__setattr__(self, "stream_stall_timeout", self.stream_stall_timeout_ms / 1000)


ChatErrorStage = Literal["parse", "persist", "turn", "stream", "recovery", "transcript"]


@dataclass(frozen=True, kw_only=True)
class ChatErrorContext:
    """Passed to `on_chat_error` with the error."""

    request_id: str
    stage: ChatErrorStage
    """Where the turn failed: `persist` (saving the new messages), `turn` (before streaming:
    assembly or `before_turn`), `stream` (the model, a tool wrapper or a hook mid-stream), …"""
    messages_persisted: bool
    """Whether the turn's messages (and the partial reply, for `stream`) are stored."""
    classification: str | None = None
    """What `classify_chat_error` says about a `stream` error (`"context_overflow"`, …), if anything."""
    trigger: str = ""
    """What started the turn (`think.turns.turn.TurnTrigger`)."""
    signal: anyio.Event | None = None
    """The turn's cancel signal (None when the turn failed before it had one)."""
