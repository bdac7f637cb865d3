"""Any pydantic-ai model as a think `Model` (the optional `providers` extra).

This reaches every provider pydantic-ai supports (Bedrock, Vertex, Mistral, native Gemini, the
OpenAI Responses API, …) through `pydantic_ai.direct.model_request_stream`. It costs far more CPU
per streamed delta than the built-in adapters, so prefer those where they fit. pydantic-ai is
imported only when a `PydanticAIModel` is created; this module imports without it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, assert_never, cast

import orjson

from think.errors import ConfigurationError
from think.models.base import (
    AssistantMessage,
    FileContent,
    ModelRequest,
    ModelSettings,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolMessage,
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

if TYPE_CHECKING:
    import pydantic_ai.messages as pm
    import pydantic_ai.models
    import pydantic_ai.settings

INSTALL_HINT = "pip install 'think-agents[providers]'"

FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content-filter",
    "tool_call": "tool-calls",
    "error": "error",
}


def _require_pydantic_ai() -> None:
    try:
        import pydantic_ai  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(f"PydanticAIModel needs pydantic-ai: {INSTALL_HINT}") from exc


class PydanticAIModel:
    """Streams through a pydantic-ai model, given as an object or a pydantic-ai id ("openai:gpt-4.1").

    Reasoning metadata (ids, signatures) is kept under `provider_metadata["pydantic_ai"]` so it can
    be sent back; Anthropic signatures are also given as `{"anthropic": {"signature": ...}}`.
    `provider_options` are merged into pydantic-ai's model settings (keys such as
    `"openai_reasoning_effort"`).
    """

    def __init__(self, model: pydantic_ai.models.Model | str, *, label: str | None = None) -> None:
        _require_pydantic_ai()
        from pydantic_ai.exceptions import UserError
        from pydantic_ai.models import infer_model

        try:
            self.model = infer_model(model) if isinstance(model, str) else model
        except UserError as exc:  # unknown provider, missing API key…
            raise ConfigurationError(f"pydantic-ai cannot make a model of {model!r}: {exc}") from exc
        if label is None:
            name = model if isinstance(model, str) else f"{self.model.system}:{self.model.model_name}"
            label = f"pydantic-ai:{name}"
        self._label = label

    @property
    def model_id(self) -> str:
        return self._label

    def __repr__(self) -> str:
        return f"PydanticAIModel({self.model!r})"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Yield the events of one pydantic-ai streamed request, ending with exactly one `Finish`."""
        from pydantic_ai.direct import model_request_stream
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.tools import ToolDefinition

        tools = [
            ToolDefinition(
                name=tool.name, description=tool.description, parameters_json_schema=tool.input_schema
            )
            for tool in request.tools
        ]
        parameters = ModelRequestParameters(function_tools=tools, allow_text_output=True)
        settings = cast("pydantic_ai.settings.ModelSettings", pydantic_settings(request.settings))
        mapper = _EventMapper()
        tail: list[StreamEvent]
        try:
            async with model_request_stream(
                self.model,
                pydantic_messages(request),
                model_settings=settings,
                model_request_parameters=parameters,
            ) as response:
                async for part_event in response:
                    for event in mapper.map(part_event):
                        yield event
                tail = mapper.finish(response.get())
        except Exception as exc:  # pydantic-ai's errors and anything below: end the stream, never raise
            status = getattr(exc, "status_code", None)
            tail = [Finish("error", error=f"{type(exc).__name__}: {exc}", status=status)]
        for event in tail:
            yield event


class _EventMapper:
    """pydantic-ai `PartStart`/`PartDelta`/`PartEnd` events → our stream events."""

    def __init__(self) -> None:
        self._calls: dict[int, str] = {}  # part index → tool call id
        self._ready: set[str] = set()

    def map(self, event: Any) -> list[StreamEvent]:
        import pydantic_ai.messages as pm

        match event:
            case pm.PartStartEvent(index=index, part=part):
                return self._start(index, part)
            case pm.PartDeltaEvent(index=index, delta=delta):
                return self._delta(index, delta)
            case pm.PartEndEvent(part=pm.ToolCallPart() as part):
                return [self._ready_event(part)]
            case pm.PartEndEvent(part=pm.ThinkingPart() as part):
                metadata = _reasoning_metadata(part)
                return [ReasoningDelta("", metadata)] if metadata else []
            case _:
                return []

    def _start(self, index: int, part: Any) -> list[StreamEvent]:
        import pydantic_ai.messages as pm

        match part:
            case pm.TextPart(content=text):
                return [TextDelta(text)] if text else []
            case pm.ThinkingPart(content=text):
                return [ReasoningDelta(text)] if text else []
            case pm.ToolCallPart(tool_name=name, tool_call_id=call_id, args=args):
                self._calls[index] = call_id
                events: list[StreamEvent] = [ToolCallStart(call_id, name)]
                if args:
                    text = args if isinstance(args, str) else orjson.dumps(args).decode()
                    events.append(ToolCallDelta(call_id, text))
                return events
            case _:
                return []

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        import pydantic_ai.messages as pm

        match delta:
            case pm.TextPartDelta(content_delta=text):
                return [TextDelta(text)] if text else []
            case pm.ThinkingPartDelta(content_delta=text):
                return [ReasoningDelta(text)] if text else []
            case pm.ToolCallPartDelta(args_delta=str() as fragment) if fragment and index in self._calls:
                return [ToolCallDelta(self._calls[index], fragment)]
            case _:  # dict argument merges and name deltas show up in the final `ToolCallReady`
                return []

    def _ready_event(self, part: pm.ToolCallPart) -> ToolCallReady:
        self._ready.add(part.tool_call_id)
        return ToolCallReady(part.tool_call_id, part.tool_name, part.args_as_json_str())

    def finish(self, response: pm.ModelResponse) -> list[StreamEvent]:
        """Tool calls that never saw a `PartEndEvent`, then the `Finish`."""
        import pydantic_ai.messages as pm

        calls = [part for part in response.parts if isinstance(part, pm.ToolCallPart)]
        unended = [part for part in calls if part.tool_call_id not in self._ready]
        events: list[StreamEvent] = [self._ready_event(part) for part in unended]
        usage = response.usage
        ours = Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            reasoning_tokens=usage.output_reasoning_tokens or None,
            cached_input_tokens=usage.cache_read_tokens or None,
        )
        if response.finish_reason is not None:
            reason = FINISH_REASONS.get(response.finish_reason, "other")
        else:
            reason = "tool-calls" if calls else "stop"
        error = "the model reported an error" if reason == "error" else None
        events.append(Finish(reason, usage=ours, error=error))
        return events


def _reasoning_metadata(part: pm.ThinkingPart) -> dict[str, Any] | None:
    kept = {
        key: value
        for key, value in (
            ("id", part.id),
            ("signature", part.signature),
            ("provider_name", part.provider_name),
            ("provider_details", part.provider_details),
        )
        if value is not None
    }
    if not (part.id or part.signature or part.provider_details):
        return None
    metadata: dict[str, Any] = {"pydantic_ai": kept}
    if part.provider_name == "anthropic" and part.signature:
        key = "redactedData" if part.id == "redacted_thinking" else "signature"
        metadata["anthropic"] = {key: part.signature}
    return metadata


# ---- request ------------------------------------------------------------------------------------


def pydantic_messages(request: ModelRequest) -> list[pm.ModelMessage]:
    """`request` as pydantic-ai messages: the system prompt, then requests and responses.

    User messages and tool results that follow each other share one `ModelRequest`; a failed tool
    result has `outcome="failed"`.
    """
    import pydantic_ai.messages as pm

    messages: list[pm.ModelMessage] = []
    parts: list[pm.ModelRequestPart] = [pm.SystemPromptPart(request.system)] if request.system else []
    for message in request.messages:
        match message:
            case UserMessage(content=content):
                if len(content) == 1 and isinstance(content[0], TextContent):
                    parts.append(pm.UserPromptPart(content[0].text))
                else:
                    parts.append(pm.UserPromptPart([_user_item(item) for item in content]))
            case ToolMessage(results=results):
                parts.extend(
                    pm.ToolReturnPart(
                        tool_name=result.name,
                        content=result.output,
                        tool_call_id=result.call_id,
                        outcome="failed" if result.is_error else "success",
                    )
                    for result in results
                )
            case AssistantMessage(content=content):
                if parts:
                    messages.append(pm.ModelRequest(parts=parts))
                    parts = []
                response_parts = [part for item in content if (part := _response_part(item))]
                messages.append(pm.ModelResponse(parts=response_parts))
            case _:
                assert_never(message)
    if parts:
        messages.append(pm.ModelRequest(parts=parts))
    return messages


def _user_item(item: TextContent | FileContent) -> Any:
    import pydantic_ai.messages as pm

    if isinstance(item, TextContent):
        return item.text
    if item.data.startswith("data:"):
        return pm.BinaryContent.from_data_uri(item.data)
    if item.media_type.startswith("image/"):
        return pm.ImageUrl(item.data, media_type=item.media_type)
    return pm.DocumentUrl(item.data, media_type=item.media_type)


def _response_part(item: TextContent | ReasoningContent | ToolCallContent | FileContent) -> Any:
    import pydantic_ai.messages as pm

    match item:
        case TextContent(text=text):
            return pm.TextPart(text) if text else None
        case ReasoningContent(text=text, provider_metadata=metadata):
            return _thinking_part(text, metadata or {})
        case ToolCallContent(id=call_id, name=name, arguments=arguments):
            return pm.ToolCallPart(tool_name=name, args=arguments, tool_call_id=call_id)
        case FileContent():
            return None
        case _:
            assert_never(item)


def _thinking_part(text: str, metadata: dict[str, Any]) -> pm.ThinkingPart:
    import pydantic_ai.messages as pm

    if kept := metadata.get("pydantic_ai"):
        return pm.ThinkingPart(text, **{k: v for k, v in kept.items() if k in _THINKING_FIELDS})
    anthropic = metadata.get("anthropic") or {}
    if anthropic.get("redactedData"):
        redacted = anthropic["redactedData"]
        return pm.ThinkingPart(text, id="redacted_thinking", signature=redacted, provider_name="anthropic")
    if anthropic.get("signature"):
        return pm.ThinkingPart(text, signature=anthropic["signature"], provider_name="anthropic")
    return pm.ThinkingPart(text)


_THINKING_FIELDS = frozenset({"id", "signature", "provider_name", "provider_details"})


def pydantic_settings(settings: ModelSettings) -> dict[str, Any]:
    """Our settings as pydantic-ai `ModelSettings` (a TypedDict), with `provider_options` merged in."""
    choice = settings.tool_choice
    converted: dict[str, Any] = {
        "max_tokens": settings.max_output_tokens,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "top_k": settings.top_k,
        "presence_penalty": settings.presence_penalty,
        "frequency_penalty": settings.frequency_penalty,
        "stop_sequences": list(settings.stop_sequences) if settings.stop_sequences else None,
        "seed": settings.seed,
        "timeout": settings.timeout,
        "extra_headers": settings.headers,
        "tool_choice": [choice["name"]] if isinstance(choice, dict) and "name" in choice else choice,
    }
    result = {key: value for key, value in converted.items() if value is not None}
    result.update(settings.provider_options or {})
    return result
