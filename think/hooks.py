"""Hook contexts and decisions: what the loop tells a hook, and what a hook may answer.

`Think` implements every hook as an overridable method with a do-nothing default; the loop sees
only the `LoopHooks` protocol, so it can run (and be tested) without an agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from think.messages import JSONObject
from think.models.base import Model, ModelMessage, ToolChoice
from think.models.events import FinishReason, Usage

if TYPE_CHECKING:
    from think.tools.execute import ToolResult
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


@dataclass(frozen=True, kw_only=True)
class StepConfig:
    """Per-step overrides `before_step` may return. `None` keeps the turn's value."""

    model: Model | str | None = None
    system: str | None = None
    messages: Sequence[ModelMessage] | None = None
    active_tools: Sequence[str] | None = None
    tool_choice: ToolChoice | None = None


@dataclass(frozen=True, kw_only=True)
class ToolCallContext:
    """Passed to `before_tool_call`."""

    call: ToolCall
    step_number: int
    messages: Sequence[ModelMessage]
    request_id: str = ""


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
class ToolCallResultContext:
    """Passed to `after_tool_call`: the call and how it ended."""

    call: ToolCall
    step_number: int
    duration_ms: float
    success: bool
    output: Any = None
    error: str | None = None


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


@dataclass(frozen=True, kw_only=True)
class TurnConfig:
    """Per-turn overrides `before_turn` may return. `None` keeps the agent's value.

    `tools` are added to the turn's tools; `active_tools` then limits which ones the model sees.
    The remaining fields are model settings for every step of this turn.
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
