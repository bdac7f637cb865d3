"""The Anthropic adapter against a real local server speaking Messages SSE."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from tests.models.fake_llm_server import SLOW_CHUNKS, FakeLLMServer
from think.models.anthropic import AnthropicModel, anthropic_tool_choice
from think.models.base import (
    AssistantMessage,
    FileContent,
    Model,
    ModelRequest,
    ModelSettings,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolMessage,
    ToolResultContent,
    ToolSpec,
    UserMessage,
)
from think.models.events import (
    Finish,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStart,
    Usage,
)

HI = ModelRequest(system="Be brief.", messages=(UserMessage((TextContent("Hi"),)),))


def model(server: FakeLLMServer, name: str, **options: object) -> AnthropicModel:
    return AnthropicModel(name, api_key="sk-ant-test", base_url=server.url, **options)  # type: ignore[arg-type]


async def collect(events: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in events]


async def test_streams_text_then_finish_with_usage(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "text").stream(HI))

    assert events == [
        TextDelta("Hello"),
        TextDelta(", world"),
        Finish("stop", usage=Usage(input_tokens=10, output_tokens=5, cached_input_tokens=0)),
    ]
    request = fake_llm.requests[-1]
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == "sk-ant-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.body == {
        "model": "text",
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "stream": True,
    }


def test_is_a_model_with_an_id() -> None:
    adapter = AnthropicModel("claude-sonnet-4-5")

    assert isinstance(adapter, Model)
    assert adapter.model_id == "anthropic:claude-sonnet-4-5"
    assert adapter.url == "https://api.anthropic.com/v1/messages"


async def test_thinking_signature_text_and_a_streamed_tool_call(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "thinking-tools").stream(HI))

    assert events == [
        ReasoningDelta("Let me "),
        ReasoningDelta("think."),
        ReasoningDelta("", {"anthropic": {"signature": "sig-abc"}}),
        TextDelta("I'll check."),
        ToolCallStart("toolu_1", "get_weather"),
        ToolCallDelta("toolu_1", '{"city": '),
        ToolCallDelta("toolu_1", '"Lis'),
        ToolCallDelta("toolu_1", 'bon"}'),
        ToolCallReady("toolu_1", "get_weather", '{"city": "Lisbon"}'),
        Finish("tool-calls", usage=Usage(input_tokens=25, output_tokens=42, cached_input_tokens=5)),
    ]


async def test_redacted_thinking_is_carried_as_reasoning_metadata(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "redacted").stream(HI))

    assert events[:2] == [ReasoningDelta("", {"anthropic": {"redactedData": "opaque=="}}), TextDelta("Done.")]
    assert events[2] == Finish("stop", usage=Usage(input_tokens=10, output_tokens=3, cached_input_tokens=0))


async def test_a_tool_call_without_input_deltas_is_ready_with_empty_object(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "empty-tool").stream(HI))

    assert events[:2] == [ToolCallStart("toolu_2", "now"), ToolCallReady("toolu_2", "now", "{}")]
    assert isinstance(events[2], Finish)
    assert events[2].reason == "tool-calls"


@pytest.mark.parametrize(
    ("scenario", "reason"), [("max_tokens", "length"), ("refusal", "content-filter"), ("pause_turn", "other")]
)
async def test_stop_reasons_are_mapped(fake_llm: FakeLLMServer, scenario: str, reason: str) -> None:
    events = await collect(model(fake_llm, scenario).stream(HI))

    assert isinstance(events[-1], Finish)
    assert events[-1].reason == reason


async def test_an_error_event_mid_stream_ends_with_an_error_finish(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "error-mid").stream(HI))

    assert events == [
        TextDelta("Partial"),
        Finish("error", error="error from the model: Overloaded (overloaded_error)", status=529),
    ]


async def test_a_stream_without_a_stop_reason_is_an_error(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "truncated").stream(HI))

    assert events == [
        TextDelta("Partial"),
        Finish("error", usage=Usage(input_tokens=10, output_tokens=1, cached_input_tokens=0),
               error="the stream ended before the model finished (no stop_reason)"),
    ]


@pytest.mark.parametrize(
    ("scenario", "error"),
    [
        ("http-401", "HTTP 401 Unauthorized: invalid x-api-key (authentication_error)"),
        ("http-429", "HTTP 429 Too Many Requests: Number of request tokens has exceeded your rate limit "
                     "(rate_limit_error)"),
        ("http-500", "HTTP 500 Internal Server Error: Internal server error (api_error)"),
        ("http-529", "HTTP 529: Overloaded (overloaded_error)"),
    ],
)
async def test_http_errors_end_the_stream_with_the_status_and_message(
    fake_llm: FakeLLMServer, scenario: str, error: str
) -> None:
    events = await collect(model(fake_llm, scenario).stream(HI))

    assert events == [Finish("error", error=error, status=int(scenario[-3:]))]


async def test_cancelling_the_consumer_closes_the_connection(fake_llm: FakeLLMServer) -> None:
    received: list[StreamEvent] = []
    with anyio.CancelScope() as scope:
        async for event in model(fake_llm, "slow").stream(HI):
            received.append(event)
            if len(received) == 2:
                scope.cancel()

    assert received == [TextDelta("tick0 "), TextDelta("tick1 ")]
    end = await anyio.to_thread.run_sync(fake_llm.wait_stream_end)
    assert end.disconnected
    assert end.sent < SLOW_CHUNKS


async def test_request_translation(fake_llm: FakeLLMServer) -> None:
    png = "data:image/png;base64,iVBORw0KGgo="
    request = ModelRequest(
        system="You are terse.",
        messages=(
            UserMessage((
                TextContent("What is the weather?"),
                FileContent("image/png", png),
                FileContent("application/pdf", "https://example.com/r.pdf"),
                FileContent("text/plain", "data:text/plain,hello%20there", filename="notes.txt"),
            )),
            UserMessage((TextContent("In Lisbon."),)),
            AssistantMessage((
                ReasoningContent("The user wants weather.", {"anthropic": {"signature": "sig-1"}}),
                ReasoningContent("", {"anthropic": {"redactedData": "opaque=="}}),
                ReasoningContent("unsigned thoughts are dropped"),
                TextContent("Let me check."),
                ToolCallContent("toolu_1", "get_weather", {"city": "Lisbon"}),
                ToolCallContent("toolu_2", "get_time", {}),
            )),
            ToolMessage((
                ToolResultContent("toolu_1", "get_weather", {"temp_c": 21}),
                ToolResultContent("toolu_2", "get_time", "clock is broken", is_error=True),
            )),
            UserMessage((TextContent("Thanks"),)),
            AssistantMessage((ReasoningContent("no signature, so nothing to send"),)),
            UserMessage((TextContent("And tomorrow?"),)),
        ),
        tools=(ToolSpec("get_weather", "Weather for a city.", {"type": "object", "properties": {}}),),
        settings=ModelSettings(
            max_output_tokens=1000,
            temperature=0.2,
            top_p=0.9,
            top_k=40,
            presence_penalty=0.1,
            seed=7,
            stop_sequences=("END",),
            tool_choice="required",
            headers={"anthropic-beta": "interleaved-thinking-2025-05-14"},
            provider_options={"metadata": {"user_id": "u1"}},
        ),
    )
    adapter = model(fake_llm, "text", thinking={"type": "enabled", "budget_tokens": 512})
    await collect(adapter.stream(request))

    assert fake_llm.requests[-1].headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert fake_llm.last_body() == {
        "model": "text",
        "max_tokens": 1000,
        "stream": True,
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "What is the weather?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "document", "source": {"type": "url", "url": "https://example.com/r.pdf"}},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hello there"},
                 "title": "notes.txt"},
                {"type": "text", "text": "In Lisbon."},
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "The user wants weather.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque=="},
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Lisbon"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"temp_c":21}', "is_error": False},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "clock is broken", "is_error": True},
                {"type": "text", "text": "Thanks"},
                {"type": "text", "text": "And tomorrow?"},
            ]},
        ],
        "tools": [{"name": "get_weather", "description": "Weather for a city.",
                   "input_schema": {"type": "object", "properties": {}}}],
        "tool_choice": {"type": "any"},
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 40,
        "stop_sequences": ["END"],
        "thinking": {"type": "enabled", "budget_tokens": 512},
        "metadata": {"user_id": "u1"},
    }


def test_tool_results_lead_a_merged_user_message() -> None:
    from think.models.anthropic import anthropic_messages

    request = ModelRequest(system="", messages=(
        AssistantMessage((ToolCallContent("t1", "f", {}),)),
        UserMessage((TextContent("also this"),)),
        ToolMessage((ToolResultContent("t1", "f", "ok"),)),
    ))

    assert anthropic_messages(request)[1] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": False},
        {"type": "text", "text": "also this"},
    ]}


def test_tool_choice_mapping() -> None:
    assert anthropic_tool_choice("auto") == {"type": "auto"}
    assert anthropic_tool_choice("none") == {"type": "none"}
    assert anthropic_tool_choice("required") == {"type": "any"}
    assert anthropic_tool_choice({"type": "tool", "name": "x"}) == {"type": "tool", "name": "x"}
