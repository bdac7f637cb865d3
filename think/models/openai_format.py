"""The OpenAI Chat Completions format, without I/O: request bodies out, stream chunks in.

Shared by the HTTP adapter (`openai_compat`) and the llama.cpp adapter (`local`), whose
`create_chat_completion(stream=True)` yields the same chunk dicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never

import orjson

from think.models._wire import error_message, error_status, json_text, parse_data_url
from think.models.base import (
    AssistantContent,
    AssistantMessage,
    FileContent,
    ModelRequest,
    TextContent,
    ToolCallContent,
    ToolChoice,
    ToolMessage,
    ToolSpec,
    UserContent,
    UserMessage,
)
from think.models.events import (
    Finish,
    FinishReason,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStart,
    Usage,
)

JSON = dict[str, Any]

# ---- request ------------------------------------------------------------------------------------


def chat_body(model: str, request: ModelRequest, *, include_usage: bool = True) -> JSON:
    """The JSON body of a streamed `POST /chat/completions` for `request`.

    Settings map to `max_tokens` (not `max_completion_tokens`, which Ollama and vLLM ignore),
    `temperature`, `top_p`, `presence_penalty`, `frequency_penalty`, `stop` and `seed`; `top_k` is
    not part of the API and is left out (pass it in `provider_options` for servers that take it).
    `provider_options` are merged into the body last, so they can override anything.
    """
    body: JSON = {"model": model, "messages": chat_messages(request), "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    if request.tools:
        body["tools"] = chat_tools(request.tools)
        if request.settings.tool_choice is not None:
            body["tool_choice"] = chat_tool_choice(request.settings.tool_choice)
    body.update(chat_options(request))
    if request.settings.provider_options:
        body.update(request.settings.provider_options)
    return body


def chat_options(request: ModelRequest) -> JSON:
    """The sampling settings of `request`, in Chat Completions names; unset ones are left out."""
    settings = request.settings
    options: JSON = {
        "max_tokens": settings.max_output_tokens,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "presence_penalty": settings.presence_penalty,
        "frequency_penalty": settings.frequency_penalty,
        "stop": list(settings.stop_sequences) if settings.stop_sequences else None,
        "seed": settings.seed,
    }
    return {key: value for key, value in options.items() if value is not None}


def chat_messages(request: ModelRequest, *, text_only: bool = False) -> list[JSON]:
    """`request.system` and `request.messages` as Chat Completions messages.

    The system prompt comes first. Reasoning is not sent back (compatible servers reject or ignore
    it). Each tool result becomes its own `tool` message; an error result is sent as its text, since
    the format has no error flag. With `text_only`, user content is flattened to one string (for
    chat templates that only take text, such as llama.cpp's).
    """
    messages: list[JSON] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        match message:
            case UserMessage(content=content):
                messages.append({"role": "user", "content": _user_content(content, text_only=text_only)})
            case AssistantMessage(content=content):
                messages.append(_assistant_message(content))
            case ToolMessage(results=results):
                messages.extend(
                    {"role": "tool", "tool_call_id": result.call_id, "content": json_text(result.output)}
                    for result in results
                )
            case _:
                assert_never(message)
    return messages


def chat_tools(tools: Sequence[ToolSpec]) -> list[JSON]:
    return [
        {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
        }
        for tool in tools
    ]


def chat_tool_choice(choice: ToolChoice) -> str | JSON:
    """`"auto"`, `"none"`, `"required"`, or `{"type": "tool", "name": x}` as a forced function."""
    if isinstance(choice, str):
        return choice
    if choice.get("type") == "tool" and "name" in choice:
        return {"type": "function", "function": {"name": choice["name"]}}
    return dict(choice)


def _user_content(content: Sequence[UserContent], *, text_only: bool) -> str | list[JSON]:
    if len(content) == 1 and isinstance(content[0], TextContent):
        return content[0].text
    parts = [_text_part(item) if isinstance(item, TextContent) else _file_part(item) for item in content]
    if text_only:
        return "\n\n".join(
            part["text"] if part["type"] == "text" else _file_note(item)
            for part, item in zip(parts, content, strict=True)
        )
    return parts


def _text_part(item: TextContent) -> JSON:
    return {"type": "text", "text": item.text}


def _file_part(file: FileContent) -> JSON:
    """Images as `image_url`, PDFs as `file`, text files inline; anything else as a short note."""
    if file.media_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": file.data}}
    if file.media_type == "application/pdf" and file.data.startswith("data:"):
        return {"type": "file", "file": {"filename": file.filename or "document.pdf", "file_data": file.data}}
    if file.media_type.startswith("text/") and (decoded := parse_data_url(file.data)) is not None:
        text = decoded[1].decode("utf-8", "replace")
        return {"type": "text", "text": f"{file.filename or 'file'} ({file.media_type}):\n{text}"}
    return {"type": "text", "text": _file_note(file)}


def _file_note(item: UserContent) -> str:
    if isinstance(item, TextContent):
        return item.text
    return f"[attached file not sent to the model: {item.filename or 'unnamed'} ({item.media_type})]"


def _assistant_message(content: Sequence[AssistantContent]) -> JSON:
    texts = [item.text for item in content if isinstance(item, TextContent) and item.text]
    calls = [_tool_call(item) for item in content if isinstance(item, ToolCallContent)]
    message: JSON = {"role": "assistant", "content": "\n\n".join(texts) if texts else (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_call(call: ToolCallContent) -> JSON:
    wire: JSON = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": orjson.dumps(call.arguments, default=str).decode()},
    }
    extra = (call.provider_metadata or {}).get("openai", {}).get("extra_content")
    if extra is not None:  # e.g. Gemini's thought signatures, which must come back with the call
        wire["extra_content"] = extra
    return wire


# ---- stream -------------------------------------------------------------------------------------

FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "content_filter": "content-filter",
}


class _PendingCall:
    __slots__ = ("arguments", "extra", "id", "name", "started")

    def __init__(self, id: str, name: str) -> None:
        self.id = id
        self.name = name
        self.arguments: list[str] = []
        self.extra: Any = None
        self.started = False


class ChatChunkDecoder:
    """Turns Chat Completions stream chunks into stream events.

    Text, `reasoning_content` and `reasoning` deltas are passed on as they come. Tool calls are
    gathered by `index`: the first chunk that names a call gives `ToolCallStart`, each argument
    fragment a `ToolCallDelta`, and when `finish_reason` arrives (or the stream ends) every call gets
    one `ToolCallReady`, in index order. `close()` gives the `Finish`, with the usage chunk that
    `stream_options.include_usage` adds after the finish reason.
    """

    def __init__(self) -> None:
        self.stopped = False
        self._calls: dict[int, _PendingCall] = {}
        self._had_calls = False
        self._finish_reason: str | None = None
        self._usage: Any = None
        self._error: Finish | None = None

    def feed(self, data: str, event: str = "message") -> list[StreamEvent]:
        """Translate one SSE `data:` payload (a JSON chunk)."""
        return self.feed_chunk(orjson.loads(data))

    def feed_chunk(self, chunk: Any) -> list[StreamEvent]:
        """Translate one chunk dict."""
        error = chunk.get("error")
        if error is not None:
            message = error_message({"error": error}) or json_text(error)
            status = error_status(error)
            self._error = Finish("error", error=f"error from the model: {message}", status=status)
            self.stopped = True
            return []
        usage = chunk.get("usage")
        if usage:
            self._usage = usage
        choices = chunk.get("choices")
        if not choices:
            return []
        choice = choices[0]
        events: list[StreamEvent] = []
        delta = choice.get("delta")
        if delta:
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning and isinstance(reasoning, str):
                events.append(ReasoningDelta(reasoning))
            content = delta.get("content")
            if content:
                events.append(TextDelta(content))
            elif refusal := delta.get("refusal"):
                events.append(TextDelta(refusal))
            tool_calls = delta.get("tool_calls")
            if tool_calls:
                self._feed_tool_calls(tool_calls, events)
        finish_reason = choice.get("finish_reason")
        if finish_reason:
            self._finish_reason = finish_reason
            self._flush_calls(events)
        return events

    def _feed_tool_calls(self, tool_calls: list[Any], events: list[StreamEvent]) -> None:
        for wire in tool_calls:
            index = wire.get("index")
            if index is None:
                index = self._index_without_index(wire.get("id"))
            function = wire.get("function") or {}
            call = self._calls.get(index)
            if call is None:
                call = self._calls[index] = _PendingCall(wire.get("id") or "", function.get("name") or "")
                self._had_calls = True
            elif not call.name and function.get("name"):
                call.name = function["name"]
            if not call.id and wire.get("id"):
                call.id = wire["id"]
            if wire.get("extra_content") is not None:
                call.extra = wire["extra_content"]
            fragment = function.get("arguments")
            if fragment and not isinstance(fragment, str):  # a few servers send an object
                fragment = orjson.dumps(fragment).decode()
            if not call.started and call.name:
                call.started = True
                if not call.id:
                    call.id = f"call_{index}"
                events.append(ToolCallStart(call.id, call.name))
                if call.arguments:  # fragments that came before the name
                    events.append(ToolCallDelta(call.id, "".join(call.arguments)))
            if fragment:
                call.arguments.append(fragment)
                if call.started:
                    events.append(ToolCallDelta(call.id, fragment))

    def _index_without_index(self, call_id: str | None) -> int:
        """Place a tool-call entry that has no `index` (some servers omit it): by id, else the last."""
        for index, call in self._calls.items():
            if call_id and call.id == call_id:
                return index
        if call_id or not self._calls:
            return max(self._calls, default=-1) + 1
        return max(self._calls)

    def _flush_calls(self, events: list[StreamEvent]) -> None:
        for index in sorted(self._calls):
            call = self._calls[index]
            metadata = {"openai": {"extra_content": call.extra}} if call.extra is not None else None
            call_id = call.id or f"call_{index}"
            events.append(ToolCallReady(call_id, call.name, "".join(call.arguments), metadata))
        self._calls.clear()

    def close(self) -> list[StreamEvent]:
        """The remaining tool calls and the `Finish`."""
        if self._error is not None:
            return [self._error]
        events: list[StreamEvent] = []
        self._flush_calls(events)
        if self._finish_reason is None:
            events.append(
                Finish(
                    "error",
                    usage=self._make_usage(),
                    error="the stream ended before the model finished (no finish_reason)",
                )
            )
            return events
        reason = FINISH_REASONS.get(self._finish_reason, "other")
        if reason == "stop" and self._had_calls:  # some servers say "stop" after tool calls
            reason = "tool-calls"
        events.append(Finish(reason, usage=self._make_usage()))
        return events

    def _make_usage(self) -> Usage | None:
        usage = self._usage
        if not isinstance(usage, dict):
            return None
        completion_details = usage.get("completion_tokens_details") or {}
        prompt_details = usage.get("prompt_tokens_details") or {}
        return Usage(
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            reasoning_tokens=completion_details.get("reasoning_tokens"),
            cached_input_tokens=prompt_details.get("cached_tokens"),
        )
