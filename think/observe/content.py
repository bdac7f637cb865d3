"""Message content in the GenAI conventions' JSON shape, for spans that opted in to content."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from think.models.base import (
    AssistantMessage,
    FileContent,
    ModelMessage,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolMessage,
)


def _part(content: Any) -> dict[str, Any]:
    if isinstance(content, TextContent):
        return {"type": "text", "content": content.text}
    if isinstance(content, ReasoningContent):
        return {"type": "reasoning", "content": content.text}
    if isinstance(content, ToolCallContent):
        return {"type": "tool_call", "id": content.id, "name": content.name, "arguments": content.arguments}
    if isinstance(content, FileContent):  # the bytes stay out of traces
        return {"type": "blob", "mime_type": content.media_type, "filename": content.filename}
    return {"type": type(content).__name__}


def input_messages(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            out.append({"role": "tool", "parts": [
                {"type": "tool_call_response", "id": r.call_id, "response": r.output} for r in message.results]})
        else:
            out.append({"role": "assistant" if isinstance(message, AssistantMessage) else "user",
                        "parts": [_part(c) for c in message.content]})
    return out


def output_parts(blocks: Sequence[Any], calls: Sequence[tuple[str, str, Any]]) -> list[dict[str, Any]]:
    """A step's text/reasoning blocks and its tool calls `(id, name, arguments)`."""
    return [*(_part(b) for b in blocks), *({"type": "tool_call", "id": i, "name": n, "arguments": a}
                                          for i, n, a in calls)]
