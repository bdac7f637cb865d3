"""The transcript in AG-UI's message shapes, and an AG-UI client's messages back into ours.

Out (`MESSAGES_SNAPSHOT`): each stored message becomes the AG-UI messages a client would have
built from its stream (`think.ui_protocols.ag_ui.events`): a user message (its text, its files as
media parts); an assistant message (its text parts joined as `Message.text` joins them, every
tool call in `toolCalls`) preceded by a reasoning message per reasoning part and followed by a
tool message (`result-<toolCallId>`) per call that has its result.

In (`RunAgentInput.messages`): nothing here is trusted. `split_input` sorts what a client sent
into what `think.server.reconcile` (and so `think.turns.trust`) judges — user, assistant, system
and developer messages as our `Message`s, under the ids the client gave them — and the tool
messages, which are claimed results for calls (`ClaimedResult`); those are put to the same checks
a `cf_agent_tool_result` frame is (`think.ui_protocols.ag_ui.run`). Reasoning and activity
messages are the client's copy of what the server streamed and are ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    DocumentPart,
    FunctionCall,
    ImagePart,
    ReasoningMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import (
    Message as AgUiMessage,
)

from think.messages import FilePart, Message, ReasoningPart, ToolPart
from think.messages import TextPart as OurTextPart
from think.stream.fold import normalize_input
from think.ui_protocols.ag_ui.events import output_text, reasoning_id, result_id

_SETTLED = {"output-available", "output-error", "output-denied"}


# ---- out ----------------------------------------------------------------------------------------------


def to_ag_ui(messages: Sequence[Message]) -> list[AgUiMessage]:
    """The stored transcript as AG-UI messages (see the module docstring)."""
    out: list[AgUiMessage] = []
    for message in messages:
        if message.role == "user":
            out.append(_user(message))
        elif message.role == "assistant":
            out.extend(_assistant(message))
    return out


def _user(message: Message) -> UserMessage:
    files = [p for p in message.parts if isinstance(p, FilePart)]
    if not files:
        return UserMessage(id=message.id, content=message.text)
    content: list[Any] = [TextPart(text=message.text)] if message.text else []
    for part in files:
        source = _source(part)
        content.append(ImagePart(source=source) if part.media_type.startswith("image/")
                       else DocumentPart(source=source))
    return UserMessage(id=message.id, content=content)


def _source(part: FilePart) -> dict[str, str]:
    if part.url.startswith("data:") and ";base64," in part.url:
        header, data = part.url[5:].split(";base64,", 1)
        return {"type": "data", "value": data, "mimeType": header or part.media_type}
    return {"type": "url", "value": part.url, "mimeType": part.media_type}


def _assistant(message: Message) -> list[AgUiMessage]:
    out: list[AgUiMessage] = []
    reasoning = [p for p in message.parts if isinstance(p, ReasoningPart) and p.text]
    for index, thought in enumerate(reasoning):
        out.append(ReasoningMessage(id=reasoning_id(message.id, index), content=thought.text))
    calls = message.tool_parts
    tool_calls = [ToolCall(id=p.tool_call_id, function=FunctionCall(
        name=p.tool_name or p.type.removeprefix("tool-"), arguments=output_text(
            p.input if p.input is not None else {}))) for p in calls]
    out.append(AssistantMessage(id=message.id, content=message.text or None, tool_calls=tool_calls or None))
    for part in calls:
        if part.state in _SETTLED:
            out.append(ToolMessage(id=result_id(part.tool_call_id), tool_call_id=part.tool_call_id,
                                   content=_result_text(part),
                                   error=part.error_text if part.state == "output-error" else None))
    return out


def _result_text(part: ToolPart) -> str:
    if part.state == "output-denied":
        return "The tool call was denied"
    if part.state == "output-error":
        return part.error_text or "error"
    return output_text(part.output)


# ---- in -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimedResult:
    """A tool message of the client's: the result it claims for a call."""

    tool_call_id: str
    output: Any
    error: str | None


@dataclass
class ClientInput:
    """`RunAgentInput.messages`, sorted (see the module docstring)."""

    messages: list[Message]
    """User, assistant, system and developer messages, for `reconcile`, in order."""
    results: list[ClaimedResult]


def split_input(messages: Sequence[AgUiMessage]) -> ClientInput:
    """Sort a client's messages (see the module docstring). Raises pydantic's ValidationError
    for one that does not make a message of ours (an empty id, say)."""
    ours: list[Message] = []
    results: list[ClaimedResult] = []
    for message in messages:
        role = message.role
        if isinstance(message, ToolMessage):
            results.append(ClaimedResult(message.tool_call_id, _output(message.content), message.error))
        elif isinstance(message, UserMessage):
            ours.append(Message(id=message.id, role="user", parts=_user_parts(message.content)))
        elif isinstance(message, AssistantMessage):
            if ours and ours[-1].role == "assistant" and ours[-1].id == message.id:
                continue  # one message, resent in two pieces
            ours.append(Message(id=message.id, role="assistant", parts=_assistant_parts(message)))
        elif role in ("system", "developer"):
            content = getattr(message, "content", "")
            ours.append(Message(id=message.id, role="system",
                                parts=[OurTextPart(text=content if isinstance(content, str) else "")]))
    return ClientInput(ours, results)


def _output(content: Any) -> Any:
    if isinstance(content, str):
        return content
    return "".join(getattr(p, "text", "") for p in content)


def _user_parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [OurTextPart(text=content)]
    parts: list[Any] = []
    for part in content:
        if isinstance(part, TextPart):
            parts.append(OurTextPart(text=part.text))
            continue
        source = getattr(part, "source", None)
        kind, value = getattr(source, "type", None), getattr(source, "value", None)
        mime = getattr(source, "mime_type", None) or f"{part.type}/*"
        if kind == "data" and isinstance(value, str):
            parts.append(FilePart(media_type=mime, url=f"data:{mime};base64,{value}"))
        elif kind == "url" and isinstance(value, str):
            parts.append(FilePart(media_type=mime, url=value))
    return parts


def _assistant_parts(message: AssistantMessage) -> list[Any]:
    parts: list[Any] = [OurTextPart(text=message.content)] if message.content else []
    for call in message.tool_calls or ():
        parts.append(ToolPart(type=f"tool-{call.function.name}", tool_call_id=call.id, tool_name=call.function.name,
                              state="input-available", input=normalize_input(call.function.arguments)))
    return parts
