"""The OpenAI-compatible adapter against a real local server speaking Chat Completions SSE."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from tests.models.fake_llm_server import SLOW_CHUNKS, FakeLLMServer
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
from think.models.openai_compat import OpenAICompatibleModel
from think.models.openai_format import ChatChunkDecoder, chat_messages, chat_tool_choice
from think.models.sse import ServerSentEvent, iter_sse

HI = ModelRequest(system="Be brief.", messages=(UserMessage((TextContent("Hi"),)),))


def model(server: FakeLLMServer, name: str, **options: object) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(name, base_url=f"{server.url}/v1", api_key="sk-test", **options)  # type: ignore[arg-type]


async def collect(events: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in events]


async def test_streams_text_then_finish_with_usage(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "text").stream(HI))

    assert events == [
        TextDelta("Hello"),
        TextDelta(", world"),
        TextDelta("!"),
        Finish("stop", usage=Usage(input_tokens=12, output_tokens=3, reasoning_tokens=0, cached_input_tokens=4)),
    ]
    request = fake_llm.requests[-1]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body == {
        "model": "text",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_is_a_model_with_an_id() -> None:
    plain = OpenAICompatibleModel("m", base_url="http://127.0.0.1:1/v1")
    labelled = OpenAICompatibleModel("gpt-4.1-mini", base_url="http://x/v1", label="openai:gpt-4.1-mini")

    assert isinstance(plain, Model)
    assert plain.model_id == "openai-compatible:m"
    assert labelled.model_id == "openai:gpt-4.1-mini"


async def test_tool_call_arguments_stream_as_deltas_then_ready_in_index_order(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "tools").stream(HI))

    assert events == [
        TextDelta("Checking."),
        ToolCallStart("call_1", "get_weather"),
        ToolCallDelta("call_1", '{"city": '),
        ToolCallDelta("call_1", '"Lisbon"}'),
        ToolCallStart("call_2", "get_time"),
        ToolCallDelta("call_2", '{"tz":'),
        ToolCallDelta("call_2", ' "UTC"}'),
        ToolCallReady("call_1", "get_weather", '{"city": "Lisbon"}'),
        ToolCallReady("call_2", "get_time", '{"tz": "UTC"}'),
        Finish("tool-calls", usage=Usage(30, 25, 0, 0)),
    ]


async def test_whole_tool_calls_without_index_and_a_stop_reason_are_tool_calls(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "tools-no-index", include_usage=False).stream(HI))

    assert events == [
        ToolCallStart("call_a", "get_weather"),
        ToolCallDelta("call_a", '{"city": "Oslo"}'),
        ToolCallReady("call_a", "get_weather", '{"city": "Oslo"}'),
        Finish("tool-calls"),
    ]
    assert "stream_options" not in fake_llm.last_body()


@pytest.mark.parametrize("variant", ["reasoning_content", "reasoning"])
async def test_both_reasoning_fields_become_reasoning_deltas(fake_llm: FakeLLMServer, variant: str) -> None:
    events = await collect(model(fake_llm, variant).stream(HI))

    assert events == [
        ReasoningDelta("Think "),
        ReasoningDelta("hard."),
        TextDelta("Answer."),
        Finish("stop", usage=Usage(input_tokens=20, output_tokens=9, reasoning_tokens=7, cached_input_tokens=0)),
    ]


@pytest.mark.parametrize(
    ("scenario", "reason"), [("length", "length"), ("content_filter", "content-filter"), ("odd-finish", "other")]
)
async def test_finish_reasons_are_mapped(fake_llm: FakeLLMServer, scenario: str, reason: str) -> None:
    events = await collect(model(fake_llm, scenario).stream(HI))

    assert isinstance(events[-1], Finish)
    assert events[-1].reason == reason


async def test_an_error_chunk_mid_stream_ends_with_an_error_finish(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "error-mid").stream(HI))

    assert events == [
        TextDelta("Partial"),
        Finish("error", error="error from the model: Upstream overloaded (server_error)", status=503),
    ]


async def test_malformed_json_mid_stream_ends_with_an_error_finish(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "malformed").stream(HI))

    assert events[0] == TextDelta("Partial")
    assert len(events) == 2
    finish = events[1]
    assert isinstance(finish, Finish)
    assert finish.reason == "error"
    assert finish.error is not None
    assert finish.error.startswith(f"malformed data in the stream from {fake_llm.url}/v1/chat/completions")


async def test_a_stream_that_stops_before_a_finish_reason_is_an_error(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "truncated").stream(HI))

    assert events == [
        TextDelta("Partial"),
        Finish("error", error="the stream ended before the model finished (no finish_reason)"),
    ]


@pytest.mark.parametrize(
    ("scenario", "error"),
    [
        ("http-401", "HTTP 401 Unauthorized: Incorrect API key provided (invalid_request_error)"),
        ("http-429", "HTTP 429 Too Many Requests: Rate limit reached for requests"),
        ("http-500", "HTTP 500 Internal Server Error: The server had an error while processing your request "
                     "(server_error)"),
        ("http-502", "HTTP 502 Bad Gateway: <html>Bad gateway</html>"),
    ],
)
async def test_http_errors_end_the_stream_with_the_status_and_message(
    fake_llm: FakeLLMServer, scenario: str, error: str
) -> None:
    events = await collect(model(fake_llm, scenario).stream(HI))

    assert events == [Finish("error", error=error, status=int(scenario[-3:]))]


async def test_a_refused_connection_ends_with_an_error_finish() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    events = await collect(OpenAICompatibleModel("m", base_url=f"http://127.0.0.1:{port}/v1").stream(HI))

    assert len(events) == 1
    assert isinstance(events[0], Finish)
    assert events[0].reason == "error"
    assert events[0].error is not None
    assert events[0].error.startswith(f"request to http://127.0.0.1:{port}/v1/chat/completions failed: ConnectError")


async def test_a_read_timeout_ends_with_an_error_finish_and_hangs_up(fake_llm: FakeLLMServer) -> None:
    slow_reader = model(fake_llm, "hang", timeout=httpx.Timeout(5.0, read=0.3))
    events = await collect(slow_reader.stream(HI))

    assert events == [Finish("error", error=f"waiting for data timed out calling {fake_llm.url}/v1/chat/completions")]
    end = await anyio.to_thread.run_sync(fake_llm.wait_stream_end)
    assert end.disconnected


async def test_settings_timeout_overrides_the_model_timeout(fake_llm: FakeLLMServer) -> None:
    request = ModelRequest(system="", messages=HI.messages, settings=ModelSettings(timeout=0.3))
    events = await collect(model(fake_llm, "hang").stream(request))

    assert len(events) == 1
    assert isinstance(events[0], Finish)
    assert events[0].error is not None
    assert "timed out" in events[0].error


async def test_cancelling_the_consumer_closes_the_connection(fake_llm: FakeLLMServer) -> None:
    received: list[StreamEvent] = []
    with anyio.CancelScope() as scope:
        async for event in model(fake_llm, "slow").stream(HI):
            received.append(event)
            if len(received) == 3:
                scope.cancel()

    assert scope.cancelled_caught
    assert received == [TextDelta("tick0 "), TextDelta("tick1 "), TextDelta("tick2 ")]
    end = await anyio.to_thread.run_sync(fake_llm.wait_stream_end)
    assert end.disconnected
    assert end.sent < SLOW_CHUNKS


async def test_closing_the_stream_early_closes_the_connection(fake_llm: FakeLLMServer) -> None:
    stream = model(fake_llm, "slow").stream(HI)
    assert await anext(stream) == TextDelta("tick0 ")
    await stream.aclose()  # type: ignore[attr-defined]

    end = await anyio.to_thread.run_sync(fake_llm.wait_stream_end)
    assert end.disconnected
    assert end.sent < SLOW_CHUNKS


async def test_a_given_client_is_used_and_left_open(fake_llm: FakeLLMServer) -> None:
    async with httpx.AsyncClient(headers={"x-from-client": "yes"}) as client:
        adapter = model(fake_llm, "text", client=client)
        await collect(adapter.stream(HI))
        await adapter.aclose()
        await collect(adapter.stream(HI))  # still usable

    assert [r.headers["x-from-client"] for r in fake_llm.requests] == ["yes", "yes"]


async def test_an_owned_client_is_reused_then_closed(fake_llm: FakeLLMServer) -> None:
    adapter = model(fake_llm, "text")
    first = await collect(adapter.stream(HI))
    second = await collect(adapter.stream(HI))
    await adapter.aclose()

    assert first == second
    assert len({r.headers.get("host") for r in fake_llm.requests}) == 1


async def test_request_translation(fake_llm: FakeLLMServer) -> None:
    png = "data:image/png;base64,iVBORw0KGgo="
    pdf = "data:application/pdf;base64,JVBERi0xLjQ="
    notes = "data:text/plain;base64,bm90ZXM="  # "notes"
    request = ModelRequest(
        system="You are terse.",
        messages=(
            UserMessage((
                TextContent("What is the weather?"),
                FileContent("image/png", png),
                FileContent("application/pdf", pdf, filename="report.pdf"),
                FileContent("text/plain", notes, filename="notes.txt"),
                FileContent("application/zip", "data:application/zip;base64,UEs=", filename="a.zip"),
            )),
            AssistantMessage((
                ReasoningContent("The user wants weather.", {"anthropic": {"signature": "sig"}}),
                TextContent("Let me check."),
                ToolCallContent("call_1", "get_weather", {"city": "Lisbon"}),
                ToolCallContent("call_2", "get_time", {}, {"openai": {"extra_content": {"google": {"x": 1}}}}),
            )),
            ToolMessage((
                ToolResultContent("call_1", "get_weather", {"temp_c": 21}),
                ToolResultContent("call_2", "get_time", "clock is broken", is_error=True),
            )),
            UserMessage((TextContent("Thanks"),)),
        ),
        tools=(ToolSpec("get_weather", "Weather for a city.", {"type": "object", "properties": {}}),),
        settings=ModelSettings(
            max_output_tokens=256,
            temperature=0.2,
            top_p=0.9,
            top_k=40,
            presence_penalty=0.1,
            frequency_penalty=0.3,
            stop_sequences=("END",),
            seed=7,
            tool_choice={"type": "tool", "name": "get_weather"},
            headers={"x-trace": "t-1"},
            provider_options={"parallel_tool_calls": False, "temperature": 0.5},
        ),
    )
    await collect(model(fake_llm, "text").stream(request))

    assert fake_llm.requests[-1].headers["x-trace"] == "t-1"
    assert fake_llm.last_body() == {
        "model": "text",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": "You are terse."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is the weather?"},
                    {"type": "image_url", "image_url": {"url": png}},
                    {"type": "file", "file": {"filename": "report.pdf", "file_data": pdf}},
                    {"type": "text", "text": "notes.txt (text/plain):\nnotes"},
                    {"type": "text", "text": "[attached file not sent to the model: a.zip (application/zip)]"},
                ],
            },
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": '{"city":"Lisbon"}'}},
                    {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"},
                     "extra_content": {"google": {"x": 1}}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c":21}'},
            {"role": "tool", "tool_call_id": "call_2", "content": "clock is broken"},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [
            {"type": "function", "function": {
                "name": "get_weather", "description": "Weather for a city.",
                "parameters": {"type": "object", "properties": {}}}},
        ],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "max_tokens": 256,
        "temperature": 0.5,
        "top_p": 0.9,
        "presence_penalty": 0.1,
        "frequency_penalty": 0.3,
        "stop": ["END"],
        "seed": 7,
        "parallel_tool_calls": False,
    }


def test_tool_choice_mapping() -> None:
    assert chat_tool_choice("auto") == "auto"
    assert chat_tool_choice("none") == "none"
    assert chat_tool_choice("required") == "required"
    assert chat_tool_choice({"type": "tool", "name": "x"}) == {"type": "function", "function": {"name": "x"}}


def test_an_assistant_message_with_only_tool_calls_has_null_content_and_no_tools_means_no_choice() -> None:
    request = ModelRequest(
        system="",
        messages=(AssistantMessage((ReasoningContent("hmm"), ToolCallContent("c", "f", {"a": 1}))),),
        settings=ModelSettings(tool_choice="required"),
    )
    messages = chat_messages(request)

    assert messages == [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}]}]


def test_text_only_flattens_user_content() -> None:
    request = ModelRequest(system="s", messages=(UserMessage((
        TextContent("Look:"), FileContent("image/png", "data:image/png;base64,AA==", filename="a.png"),
    )),))

    assert chat_messages(request, text_only=True)[1] == {
        "role": "user",
        "content": "Look:\n\n[attached file not sent to the model: a.png (image/png)]",
    }


def test_decoder_keeps_extra_content_on_a_tool_call() -> None:
    decoder = ChatChunkDecoder()
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"},
            "extra_content": {"google": {"thought_signature": "ts"}}}
    events = decoder.feed_chunk({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]})
    events += decoder.feed_chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})

    assert events == [
        ToolCallStart("c1", "f"),
        ToolCallDelta("c1", "{}"),
        ToolCallReady("c1", "f", "{}", {"openai": {"extra_content": {"google": {"thought_signature": "ts"}}}}),
    ]
    assert decoder.close() == [Finish("tool-calls")]


async def test_sse_parser_handles_fields_comments_multiline_data_and_done() -> None:
    async def lines() -> AsyncIterator[str]:
        for line in [
            ": a comment", "event: greeting", "data: hello", "", "data:no-space", "data: two", "",
            "id: 7", "retry: 10", "data: {}", "", "", "data: [DONE]", "", "data: after done", "",
        ]:
            yield line

    events = [event async for event in iter_sse(lines())]

    assert events == [
        ServerSentEvent("hello", "greeting"),
        ServerSentEvent("no-space\ntwo"),
        ServerSentEvent("{}"),
    ]


async def test_sse_parser_yields_an_unterminated_last_event() -> None:
    async def lines() -> AsyncIterator[str]:
        yield "event: x"
        yield "data: last"

    assert [event async for event in iter_sse(lines())] == [ServerSentEvent("last", "x")]
