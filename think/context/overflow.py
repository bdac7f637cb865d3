"""Context overflow: recognising "the prompt is too long", and compacting instead of failing.

* Reactive: a turn whose model call failed with a context overflow is compacted and run again
  (`ContextOverflowPolicy.max_retries` times; the failed attempt's partial reply is dropped).
* Proactive: before each step, if the previous step's input tokens passed
  `max_input_tokens * headroom`, the session is compacted and the next step gets the compacted
  history plus this turn's in-flight messages (`ContextGuard`, a wrapper around the turn's hooks).

Both need a compaction function on the session (`session.on_compaction(...)`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from think.errors import ContextOverflow
from think.hook_results import step_config
from think.hooks import (
    LoopHooks,
    StepConfig,
    StepContext,
    StepRecord,
    ToolCallContext,
    ToolCallResultContext,
    ToolDecision,
)
from think.messages import JSONObject
from think.models.base import ModelMessage

if TYPE_CHECKING:
    from think.sessions.session import Session

log = logging.getLogger("think.context")

ChatErrorClass = Literal["context_overflow", "rate_limit", "transient", "fatal", "unknown"]
OVERFLOW_PHRASES = (
    "prompt is too long", "context_length_exceeded", "context length exceeded", "maximum context length",
    "exceeds the maximum number of tokens", "input token count", "reduce the length of", "input is too long",
    "too many input tokens", "too many tokens", "context window",
)
"""What Anthropic, OpenAI, Google, Mistral, Groq, llama.cpp, vLLM … say when a prompt does not fit."""


def default_context_overflow_classifier(error: BaseException | str) -> ChatErrorClass | None:
    """"context_overflow" for a `ContextOverflow`, or an error text naming a full context window."""
    if isinstance(error, ContextOverflow):
        return "context_overflow"
    text = str(error).lower()
    return "context_overflow" if any(phrase in text for phrase in OVERFLOW_PHRASES) else None


@dataclass(frozen=True, kw_only=True)
class ContextOverflowPolicy:
    """How a turn recovers from a context that is too long (`Think.context_overflow`)."""

    reactive: bool = True
    """Compact and re-run a turn whose model call failed with a context overflow."""
    max_retries: int = 1
    max_input_tokens: int | None = None
    """Proactive: compact before a step once the previous step used this many input tokens …"""
    headroom: float = 0.9
    """… times this fraction."""
    max_compactions: int = 1
    """Proactive compactions per turn, at most."""


async def compact_for_retry(session: Session) -> bool:
    """Compact after an overflow; True if the model's view got smaller (worth a retry)."""
    if not session.can_compact:
        return False
    before = session.token_estimate()
    try:
        compaction = await session.compact()
    except Exception:
        log.exception("compaction after a context overflow failed")
        return False
    return compaction is not None and session.token_estimate() < before


class ContextGuard:
    """The turn's hooks, with a proactive compaction check before each step."""

    def __init__(self, hooks: LoopHooks, session: Session, policy: ContextOverflowPolicy, *,
                 base_messages: int, history: Callable[[], Sequence[ModelMessage]]) -> None:
        self.hooks = hooks
        self.session = session
        self.policy = policy
        self.base_messages = base_messages
        """How many of the loop's messages came from the session (the rest are this turn's)."""
        self.history = history
        self.compactions = 0

    def _over(self, steps: Sequence[StepRecord]) -> bool:
        limit = self.policy.max_input_tokens
        if limit is None or not steps or self.compactions >= self.policy.max_compactions:
            return False
        usage = steps[-1].usage
        used = None if usage is None else (usage.input_tokens or usage.total_tokens)
        return used is not None and used >= limit * self.policy.headroom

    async def before_step(self, ctx: StepContext) -> StepConfig | None:
        messages: list[ModelMessage] | None = None
        if self._over(ctx.steps) and self.session.can_compact:
            self.compactions += 1
            try:
                compacted = await self.session.compact()
            except Exception:
                log.exception("proactive compaction failed; the step runs with the full history")
                compacted = None
            if compacted is not None:
                history = list(self.history())
                messages = history + list(ctx.messages[self.base_messages:])
                self.base_messages = len(history)
                ctx = replace(ctx, messages=tuple(messages))
        config = step_config(await self.hooks.before_step(ctx))
        if messages is not None and (config is None or config.messages is None):
            config = replace(config or StepConfig(), messages=messages)
        return config

    async def before_tool_call(self, ctx: ToolCallContext) -> ToolDecision | None:
        return await self.hooks.before_tool_call(ctx)

    async def after_tool_call(self, ctx: ToolCallResultContext) -> None:
        await self.hooks.after_tool_call(ctx)

    async def on_step_finish(self, step: StepRecord) -> None:
        await self.hooks.on_step_finish(step)

    async def on_chunk(self, chunk: JSONObject) -> None:
        await self.hooks.on_chunk(chunk)
