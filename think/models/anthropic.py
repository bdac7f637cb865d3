"""Anthropic's Messages API, streamed over httpx.

Request: the system prompt is top-level; tool results travel in user messages as `tool_result`
blocks; consecutive messages of one role are merged, as the API requires; signed reasoning goes
back as `thinking` (or `redacted_thinking`) blocks. Stream: content blocks become stream events
as they arrive; a `tool_use` block becomes `ToolCallReady` at its `content_block_stop`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, assert_never

import httpx
import orjson

from think.models._wire import (
    DEFAULT_TIMEOUT,
    SseModel,
    StreamDecoder,
    Timeout,
    data_url_base64,
    error_message,
    json_text,
    parse_data_url,
)
from think.models.base import (
    AssistantContent,
    AssistantMessage,
    FileContent,
    ModelRequest,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolChoice,
    ToolMessage,
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


class AnthropicModel(SseModel):
    """Streams `POST {base_url}/v1/messages` (client and timeouts: see `SseModel`).

    `max_tokens` is required by the API; it is used when a request sets no `max_output_tokens`.
    `thinking` is sent as is, for example `{"type": "enabled", "budget_tokens": 2048}`.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = "https://api.anthropic.com",
        max_tokens: int = 4096,
        anthropic_version: str = "2023-06-01",
        thinking: dict[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
        label: str | None = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> None:
        auth = {"anthropic-version": anthropic_version, **({"x-api-key": api_key} if api_key else {})}
        super().__init__(model, url=base_url.rstrip("/") + "/v1/messages", label=label or f"anthropic:{model}",
                         auth_headers=auth, headers=headers, client=client, timeout=timeout)
        self.max_tokens = max_tokens
        self.thinking = thinking

    def request_body(self, request: ModelRequest) -> JSON:
        return messages_body(self.model, request, max_tokens=self.max_tokens, thinking=self.thinking)

    def decoder(self) -> StreamDecoder:
        return MessagesStreamDecoder()


# ---- request ------------------------------------------------------------------------------------


def messages_body(
    model: str, request: ModelRequest, *, max_tokens: int, thinking: dict[str, Any] | None = None
) -> JSON:
    """The JSON body of a streamed `POST /v1/messages` for `request`.

    `presence_penalty`, `frequency_penalty` and `seed` have no Anthropic equivalent and are left
    out. `provider_options` are merged into the body last.
    """
    settings = request.settings
    body: JSON = {
        "model": model,
        "max_tokens": settings.max_output_tokens or max_tokens,
        "messages": anthropic_messages(request),
        "stream": True,
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
            for tool in request.tools
        ]
        if settings.tool_choice is not None:
            body["tool_choice"] = anthropic_tool_choice(settings.tool_choice)
    options: JSON = {
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "top_k": settings.top_k,
        "stop_sequences": list(settings.stop_sequences) if settings.stop_sequences else None,
        "thinking": thinking,
    }
    body.update((key, value) for key, value in options.items() if value is not None)
    if settings.provider_options:
        body.update(settings.provider_options)
    return body


def anthropic_tool_choice(choice: ToolChoice) -> JSON:
    match choice:
        case "auto" | "none":
            return {"type": choice}
        case "required":
            return {"type": "any"}
        case {"type": "tool", "name": name}:
            return {"type": "tool", "name": name}
        case _:
            return dict(choice) if isinstance(choice, dict) else {"type": "auto"}


def anthropic_messages(request: ModelRequest) -> list[JSON]:
    """`request.messages` as alternating user and assistant messages.

    Tool results become `tool_result` blocks at the start of a user message. Messages left with no
    blocks (say, reasoning without a signature) are dropped; neighbours of one role are merged.
    """
    merged: list[JSON] = []
    for message in request.messages:
        match message:
            case UserMessage(content=content):
                role, blocks = "user", [block for item in content if (block := _user_block(item))]
            case AssistantMessage(content=content):
                role, blocks = "assistant", [block for item in content if (block := _assistant_block(item))]
            case ToolMessage(results=results):
                role = "user"
                blocks = [
                    {
                        "type": "tool_result",
                        "tool_use_id": result.call_id,
                        "content": json_text(result.output),
                        "is_error": result.is_error,
                    }
                    for result in results
                ]
            case _:
                assert_never(message)
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": blocks})
    for wire in merged:  # tool results must lead their user message
        if wire["role"] == "user":
            wire["content"].sort(key=lambda block: block["type"] != "tool_result")
    return merged


def _user_block(item: UserContent) -> JSON | None:
    if isinstance(item, TextContent):
        return {"type": "text", "text": item.text} if item.text else None
    return _file_block(item)


def _assistant_block(item: AssistantContent) -> JSON | None:
    match item:
        case TextContent(text=text):
            return {"type": "text", "text": text} if text else None
        case ReasoningContent(text=text, provider_metadata=metadata):
            anthropic = (metadata or {}).get("anthropic") or {}
            if anthropic.get("redactedData"):
                return {"type": "redacted_thinking", "data": anthropic["redactedData"]}
            if anthropic.get("signature"):
                return {"type": "thinking", "thinking": text, "signature": anthropic["signature"]}
            return None  # unsigned reasoning cannot be sent back
        case ToolCallContent(id=call_id, name=name, arguments=arguments):
            return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
        case FileContent():
            return None  # assistant messages cannot carry files
        case _:
            assert_never(item)


def _file_block(file: FileContent) -> JSON:
    """Images as `image`, PDFs and plain text as `document`; anything else as a short note."""
    kind = "image" if file.media_type.startswith("image/") else "document"
    if kind == "image" or file.media_type == "application/pdf":
        payload = data_url_base64(file.data)
        if payload is not None:
            source = {"type": "base64", "media_type": file.media_type, "data": payload}
            return {"type": kind, "source": source}
        if file.data.startswith(("https://", "http://")):
            return {"type": kind, "source": {"type": "url", "url": file.data}}
    elif file.media_type.startswith("text/") and (decoded := parse_data_url(file.data)) is not None:
        text = decoded[1].decode("utf-8", "replace")
        source = {"type": "text", "media_type": "text/plain", "data": text}
        block: JSON = {"type": "document", "source": source}
        if file.filename:
            block["title"] = file.filename
        return block
    note = f"[attached file not sent to the model: {file.filename or 'unnamed'} ({file.media_type})]"
    return {"type": "text", "text": note}


# ---- stream -------------------------------------------------------------------------------------

STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool-calls",
    "refusal": "content-filter",
}

ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class _ToolBlock:
    __slots__ = ("arguments", "id", "name")

    def __init__(self, id: str, name: str) -> None:
        self.id = id
        self.name = name
        self.arguments: list[str] = []

    def ready(self) -> ToolCallReady:
        return ToolCallReady(self.id, self.name, "".join(self.arguments) or "{}")


class MessagesStreamDecoder:
    """Turns Messages API server-sent events into stream events."""

    def __init__(self) -> None:
        self.stopped = False
        self._tools: dict[int, _ToolBlock] = {}
        self._stop_reason: str | None = None
        self._usage: JSON = {}
        self._error: Finish | None = None

    def feed(self, data: str, event: str = "message") -> list[StreamEvent]:
        if event == "ping":
            return []
        payload = orjson.loads(data)
        kind = payload.get("type")
        if kind == "content_block_delta":
            delta = payload["delta"]
            match delta.get("type"):
                case "text_delta":
                    return [TextDelta(delta["text"])] if delta["text"] else []
                case "thinking_delta":
                    return [ReasoningDelta(delta["thinking"])] if delta["thinking"] else []
                case "signature_delta":
                    return [ReasoningDelta("", {"anthropic": {"signature": delta["signature"]}})]
                case "input_json_delta":
                    tool = self._tools.get(payload["index"])
                    fragment = delta.get("partial_json")
                    if tool is None or not fragment:
                        return []
                    tool.arguments.append(fragment)
                    return [ToolCallDelta(tool.id, fragment)]
                case _:  # citations and future delta types
                    return []
        if kind == "content_block_start":
            return self._block_start(payload["index"], payload["content_block"])
        if kind == "content_block_stop":
            tool = self._tools.pop(payload["index"], None)
            return [] if tool is None else [tool.ready()]
        if kind == "message_start":
            self._usage.update((payload.get("message") or {}).get("usage") or {})
        elif kind == "message_delta":
            self._stop_reason = (payload.get("delta") or {}).get("stop_reason") or self._stop_reason
            self._usage.update(payload.get("usage") or {})
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            error = payload.get("error") or {}
            message = error_message(payload) or json_text(error)
            status = ERROR_STATUS.get(error.get("type", "")) if isinstance(error, dict) else None
            self._error = Finish("error", error=f"error from the model: {message}", status=status)
            self.stopped = True
        return []

    def _block_start(self, index: int, block: JSON) -> list[StreamEvent]:
        match block.get("type"):
            case "text":
                return [TextDelta(block["text"])] if block.get("text") else []
            case "thinking":
                return [ReasoningDelta(block["thinking"])] if block.get("thinking") else []
            case "redacted_thinking":
                return [ReasoningDelta("", {"anthropic": {"redactedData": block.get("data", "")}})]
            case "tool_use":
                tool = self._tools[index] = _ToolBlock(block["id"], block["name"])
                events: list[StreamEvent] = [ToolCallStart(tool.id, tool.name)]
                if block.get("input"):  # normally {} with the input streamed as JSON deltas
                    tool.arguments.append(orjson.dumps(block["input"]).decode())
                    events.append(ToolCallDelta(tool.id, tool.arguments[0]))
                return events
            case _:  # server tools and their results are not part of our events
                return []

    def close(self) -> list[StreamEvent]:
        if self._error is not None:
            return [self._error]
        events: list[StreamEvent] = [tool.ready() for tool in self._tools.values()]
        self._tools.clear()
        usage = _usage(self._usage)
        if self._stop_reason is None:
            error = "the stream ended before the model finished (no stop_reason)"
            events.append(Finish("error", usage=usage, error=error))
        else:
            events.append(Finish(STOP_REASONS.get(self._stop_reason, "other"), usage=usage))
        return events


def _usage(usage: JSON) -> Usage | None:
    """Our `Usage`; `input_tokens` counts cached and cache-writing input too, as OpenAI's does."""
    if not usage:
        return None
    counts: Sequence[int | None] = [
        usage.get("input_tokens"),
        usage.get("cache_creation_input_tokens"),
        usage.get("cache_read_input_tokens"),
    ]
    known = [count for count in counts if isinstance(count, int)]
    return Usage(
        input_tokens=sum(known) if known else None,
        output_tokens=usage.get("output_tokens"),
        cached_input_tokens=usage.get("cache_read_input_tokens"),
    )
