"""From the stored transcript to what the model sees (Think's transcript hygiene, then conversion).

* `repair_interrupted_tools` settles tool calls that never got a result, in the stored messages
  (the caller persists the repaired messages).
* `to_model_messages` converts `UIMessage`s into provider-neutral model messages, truncating old
  tool outputs and long texts for the model only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import orjson

from think.context.reminders import REMINDER_PART, reminder_text
from think.messages import (
    DataPart,
    FilePart,
    Message,
    ReasoningPart,
    StepStartPart,
    TextPart,
    ToolPart,
)
from think.models.base import (
    AssistantContent,
    AssistantMessage,
    FileContent,
    ModelMessage,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolResultContent,
    UserContent,
    UserMessage,
    split_file_output,
    tool_results_message,
)
from think.stream.fold import normalize_input

INTERRUPTED_TOOL_TEXT = "The tool call was interrupted before a result was recorded."
DENIED_TOOL_TEXT = "The user denied this tool call (execution-denied)."
RECENT_MESSAGES_KEPT_WHOLE = 4
TRUNCATION_STEP = 8
"""Messages by which the truncation cutoff moves at once (`Think.truncation_step`): between two
moves every older message is converted the same way, so a provider's prompt cache keeps hitting."""
OLD_TOOL_OUTPUT_CHARS = 500
OLD_TEXT_CHARS = 10_000
_UNSETTLED = frozenset({"input-streaming", "input-available", "approval-requested"})


def has_unsettled_tools(message: Message) -> bool:
    """True if an assistant message has a tool call without a result that is not approved."""
    return message.role == "assistant" and any(
        isinstance(p, ToolPart) and p.state in _UNSETTLED for p in message.parts)


def repair_interrupted_tools(messages: Sequence[Message], *, keep: Collection[str] = ()) -> list[Message]:
    """Settle every tool part that has no result and is not approved, except calls in `keep`.

    Returns the messages that changed (modified in place). `keep` holds call ids that are still
    legitimately pending, such as approved calls the loop is about to run.
    """
    changed: list[Message] = []
    for message in messages:
        if message.role != "assistant":
            continue
        touched = False
        for part in message.parts:
            if not isinstance(part, ToolPart) or part.tool_call_id in keep:
                continue
            if part.state in _UNSETTLED:
                part.state = "output-error"
                part.error_text = INTERRUPTED_TOOL_TEXT
                part.input = normalize_input(part.input)
                touched = True
        if touched:
            changed.append(message)
    return changed


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [truncated {len(text) - limit} chars]"


def _cap_output(output: Any, limit: int | None) -> Any:
    if limit is None:
        return output
    result, file = split_file_output(output)
    if file is not None:  # an older file output: its note stays, the file itself is not resent
        output = f"{result if isinstance(result, str) else 'A file'} (no longer attached)"
    text = output if isinstance(output, str) else orjson.dumps(output, default=str).decode()
    return output if len(text) <= limit else _truncate(text, limit)


def truncation_boundary(count: int, step: int = TRUNCATION_STEP) -> int:
    """How many of `count` messages are old (truncated): all but the last
    `RECENT_MESSAGES_KEPT_WHOLE`, rounded down to a multiple of `step`, so the cutoff moves only
    every `step` messages (1: with every message)."""
    old = max(0, count - RECENT_MESSAGES_KEPT_WHOLE)
    return old - old % max(1, step)


def to_model_messages(messages: Sequence[Message], *, step: int = TRUNCATION_STEP) -> tuple[list[ModelMessage], str]:
    """Model messages for `messages`, plus the text of any `system` UI messages.

    Each assistant step (parts between `step-start` markers) becomes an assistant message followed
    by a tool message with the step's settled results. Calls without a result are left out, so
    a provider never sees a call it cannot match with a result. Old messages (`truncation_boundary`)
    have long texts and tool outputs truncated.
    """
    boundary = truncation_boundary(len(messages), step)
    old, old_system = convert_messages(messages[:boundary], truncate=True)
    recent, recent_system = convert_messages(messages[boundary:], truncate=False)
    return old + recent, "\n\n".join(s for s in old_system + recent_system if s)


def convert_messages(messages: Sequence[Message], *, truncate: bool) -> tuple[list[ModelMessage], list[str]]:
    """Convert messages in order; `truncate` caps texts and tool outputs (for older messages)."""
    out: list[ModelMessage] = []
    system: list[str] = []
    text_limit = OLD_TEXT_CHARS if truncate else None
    output_limit = OLD_TOOL_OUTPUT_CHARS if truncate else None
    for message in messages:
        if message.role == "system":
            system.append("".join(p.text for p in message.parts if isinstance(p, TextPart)))
        elif message.role == "user":
            content: list[UserContent] = []
            for part in message.parts:
                if isinstance(part, TextPart):
                    content.append(TextContent(_truncate(part.text, text_limit) if text_limit else part.text))
                elif isinstance(part, FilePart):
                    content.append(FileContent(part.media_type, part.url, part.filename))
                elif isinstance(part, DataPart) and part.type == REMINDER_PART and isinstance(part.data, dict):
                    content.append(TextContent(reminder_text(str(part.data.get("label")),
                                                             str(part.data.get("content") or ""))))
            if content:
                out.append(UserMessage(tuple(content)))
        else:
            _assistant(message, out, text_limit, output_limit)
    return out, system


def _assistant(message: Message, out: list[ModelMessage], text_limit: int | None,
               output_limit: int | None) -> None:
    content: list[AssistantContent] = []
    results: list[ToolResultContent] = []

    def flush() -> None:
        if content:
            out.append(AssistantMessage(tuple(content)))
        out.extend(tool_results_message(results))
        content.clear()
        results.clear()

    for part in message.parts:
        if isinstance(part, StepStartPart):
            flush()
        elif isinstance(part, TextPart):
            if part.text:
                content.append(TextContent(_truncate(part.text, text_limit) if text_limit else part.text))
        elif isinstance(part, ReasoningPart):
            if part.text or part.provider_metadata:
                content.append(ReasoningContent(part.text, part.provider_metadata))
        elif isinstance(part, FilePart):
            content.append(FileContent(part.media_type, part.url, part.filename))
        elif isinstance(part, ToolPart):
            result = _tool_result(part, output_limit)
            if result is None:
                continue
            content.append(ToolCallContent(part.tool_call_id, part.name, normalize_input(part.input),
                                           part.call_provider_metadata))
            results.append(result)
    flush()


def _tool_result(part: ToolPart, output_limit: int | None) -> ToolResultContent | None:
    match part.state:
        case "output-available":
            return ToolResultContent(part.tool_call_id, part.name, _cap_output(part.output, output_limit))
        case "output-error":
            return ToolResultContent(part.tool_call_id, part.name, part.error_text or "Tool error", True)
        case "output-denied":
            reason = part.approval.reason if part.approval and part.approval.reason else None
            text = f"{DENIED_TOOL_TEXT} Reason: {reason}" if reason else DENIED_TOOL_TEXT
            return ToolResultContent(part.tool_call_id, part.name, text, True)
        case _:
            return None
