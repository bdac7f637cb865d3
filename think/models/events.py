"""What a model stream yields: a closed set of small, frozen events.

A stream is any number of deltas and tool-call events, ending with exactly one `Finish`.
Provider failures are not raised: they end the stream with `Finish(reason="error", error=...)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

FinishReason = Literal["stop", "length", "content-filter", "tool-calls", "error", "other"]


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning.

    `provider_metadata` carries what must be sent back with the reasoning on the next call,
    such as Anthropic's `{"anthropic": {"signature": ...}}` or redacted thinking data.
    """

    text: str
    provider_metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    id: str
    arguments_delta: str
    """A fragment of the arguments' JSON text."""


@dataclass(frozen=True, slots=True)
class ToolCallReady:
    """A complete tool call. `arguments` is the raw JSON text the model wrote."""

    id: str
    name: str
    arguments: str
    provider_metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


@dataclass(frozen=True, slots=True)
class Finish:
    reason: FinishReason
    usage: Usage | None = None
    error: str | None = None
    """The provider's error message when `reason == "error"`."""
    status: int | None = None
    """The HTTP status behind an error, when there was one."""


StreamEvent: TypeAlias = TextDelta | ReasoningDelta | ToolCallStart | ToolCallDelta | ToolCallReady | Finish
