"""A ready compaction function: keep the head and a recent tail, summarize the middle with a model.

    session.on_compaction(create_compact_function(summarizer_from_model(model))).compact_after(100_000)

The first `protect_head` messages (usually the task) and a tail of about `tail_token_budget`
tokens (at least `min_tail_messages`) stay verbatim; everything between is summarized. Each new
summary starts from the previous one and adds the messages after it, so summaries roll forward
instead of piling up. A tool call and its result live in one message, so a boundary never splits
them; messages still waiting for a tool result stay in the tail.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import orjson

from think.context.tokens import TokenCounter, estimate_message_tokens
from think.errors import ModelError
from think.messages import Message, ReasoningPart, TextPart, ToolPart
from think.models.base import Model, ModelRequest, TextContent, UserMessage
from think.models.events import Finish, TextDelta
from think.sessions.compaction import CompactFn, CompactionContext, CompactionResult

Summarize = Callable[[str], Awaitable[str]]
"""`summarize(prompt) -> summary`: one call to a model."""

SUMMARY_SYSTEM = ("You write compact, faithful summaries of conversations so that an assistant can "
                  "continue them without the original messages. Never invent details.")
_TOOL_TEXT_CHARS = 500


def summarizer_from_model(model: Model | str) -> Summarize:
    """A `Summarize` that asks `model` (a `Model` or a model id) with `SUMMARY_SYSTEM`."""

    async def summarize(prompt: str) -> str:
        resolved = model
        if isinstance(resolved, str):
            from think.models.registry import resolve_model

            resolved = resolve_model(resolved)
        request = ModelRequest(system=SUMMARY_SYSTEM, messages=(UserMessage((TextContent(prompt),)),))
        text: list[str] = []
        async for event in resolved.stream(request):
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, Finish) and event.reason == "error":
                raise ModelError(f"the summarizer failed: {event.error}", status=event.status)
        summary = "".join(text).strip()
        if not summary:
            raise ModelError("the summarizer returned no text")
        return summary

    return summarize


def render_for_summary(messages: Sequence[Message]) -> str:
    """Messages as plain text for a summarizer: role, text, and tool calls with short results."""
    lines = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart) and part.text:
                lines.append(f"[{message.role}] {part.text}")
            elif isinstance(part, ToolPart):
                args = orjson.dumps(part.input, default=str).decode() if part.input is not None else "{}"
                result = part.error_text if part.error_text else part.output
                text = result if isinstance(result, str) else orjson.dumps(result, default=str).decode()
                lines.append(f"[tool {part.name}({args[:_TOOL_TEXT_CHARS]})] → {text[:_TOOL_TEXT_CHARS]}")
            elif isinstance(part, ReasoningPart):
                continue  # private to the model that wrote it
    return "\n".join(lines)


def summary_prompt(messages: Sequence[Message], previous: str | None, budget: int) -> str:
    head = ("Update the earlier summary below with the newer messages that follow it. Keep what still "
            "matters, drop what was resolved.\n\nEarlier summary:\n" + previous + "\n\nNewer messages:\n"
            if previous else "Summarize this conversation.\n\nMessages:\n")
    return (head + render_for_summary(messages) + "\n\n"
            f"Write at most about {budget} tokens, in these sections:\n"
            "## Topic\n## Key points (decisions, facts, names, numbers, paths)\n## Current state\n## Open items")


def create_compact_function(summarize: Summarize | Model | str, *, protect_head: int = 3,
                            tail_token_budget: int = 20_000, min_tail_messages: int = 2,
                            token_counter: TokenCounter | None = None) -> CompactFn:
    """A compaction function for `Session.on_compaction`. See the module docstring.

    `summarize` is a `Summarize` function, or a model (or model id) to summarize with.
    """
    summarizer = summarizer_from_model(summarize) if isinstance(summarize, str | Model) else summarize
    count = token_counter or estimate_message_tokens

    async def compact(messages: Sequence[Message], ctx: CompactionContext) -> CompactionResult | None:
        previous = ctx.previous
        ids = [m.id for m in messages]
        if previous is not None:
            start = ids.index(previous.to_id) + 1 if previous.to_id in ids else 0
        else:
            start = min(protect_head, len(messages))
        tail_start, tokens = len(messages), 0
        while tail_start > start:
            cost = count(messages[tail_start - 1])
            if len(messages) - tail_start >= min_tail_messages and tokens + cost > tail_token_budget:
                break
            tokens += cost
            tail_start -= 1
        middle = list(messages[start:tail_start])
        while middle and any(isinstance(p, ToolPart) and not p.settled for p in middle[-1].parts):
            middle.pop()  # a call still waiting for its result stays in the tail, verbatim
        if not middle:
            return None
        budget = max(100, sum(count(m) for m in middle) // 5)
        summary = await summarizer(summary_prompt(middle, previous.summary if previous else None, budget))
        from_id = previous.from_id if previous is not None else middle[0].id
        return CompactionResult(summary=summary, from_id=from_id, to_id=middle[-1].id)

    return compact
