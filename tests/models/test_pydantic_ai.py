"""The pydantic-ai adapter, through pydantic-ai's real OpenAI model against the fake server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator

import anyio
import pytest

# pydantic-ai-slim[openai] is in the dev extra: a missing install fails here, it is never skipped.
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from tests.models.fake_llm_server import SLOW_CHUNKS, FakeLLMServer
from think.errors import ConfigurationError
from think.models.base import (
    AssistantMessage,
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
from think.models.pydantic_ai import PydanticAIModel

HI = ModelRequest(system="Be brief.", messages=(UserMessage((TextContent("Hi"),)),))
WEATHER = ToolSpec("get_weather", "Weather for a city.", {"type": "object", "properties": {"city": {"type": "string"}}})


def model(server: FakeLLMServer, name: str) -> PydanticAIModel:
    return PydanticAIModel(OpenAIChatModel(name, provider=OpenAIProvider(base_url=f"{server.url}/v1", api_key="k")))


async def collect(events: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in events]


async def test_streams_text_with_usage(fake_llm: FakeLLMServer) -> None:
    adapter = model(fake_llm, "text")
    events = await collect(adapter.stream(HI))

    assert isinstance(adapter, Model)
    assert adapter.model_id == "pydantic-ai:openai:text"
    assert events == [
        TextDelta("Hello"),
        TextDelta(", world"),
        TextDelta("!"),
        Finish("stop", usage=Usage(input_tokens=12, output_tokens=3, cached_input_tokens=4)),
    ]


async def test_streams_tool_calls(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "tools").stream(HI))

    assert events == [
        TextDelta("Checking."),
        ToolCallStart("call_1", "get_weather"),
        ToolCallDelta("call_1", '{"city": '),
        ToolCallDelta("call_1", '"Lisbon"}'),
        ToolCallReady("call_1", "get_weather", '{"city":"Lisbon"}'),
        ToolCallStart("call_2", "get_time"),
        ToolCallDelta("call_2", '{"tz":'),
        ToolCallDelta("call_2", ' "UTC"}'),
        ToolCallReady("call_2", "get_time", '{"tz":"UTC"}'),
        Finish("tool-calls", usage=Usage(input_tokens=30, output_tokens=25)),
    ]


@pytest.mark.parametrize("variant", ["reasoning_content", "reasoning"])
async def test_streams_reasoning_and_keeps_its_metadata(fake_llm: FakeLLMServer, variant: str) -> None:
    events = await collect(model(fake_llm, variant).stream(HI))

    assert events == [
        ReasoningDelta("Think "),
        ReasoningDelta("hard."),
        ReasoningDelta("", {"pydantic_ai": {"id": variant, "provider_name": "openai"}}),
        TextDelta("Answer."),
        Finish("stop", usage=Usage(input_tokens=20, output_tokens=9, reasoning_tokens=7)),
    ]


async def test_http_errors_end_with_an_error_finish(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "http-401").stream(HI))

    assert len(events) == 1
    finish = events[0]
    assert isinstance(finish, Finish)
    assert (finish.reason, finish.status) == ("error", 401)
    assert finish.error is not None
    assert "Incorrect API key provided" in finish.error


async def test_an_error_mid_stream_ends_with_an_error_finish(fake_llm: FakeLLMServer) -> None:
    events = await collect(model(fake_llm, "error-mid").stream(HI))

    assert events[0] == TextDelta("Partial")
    assert isinstance(events[1], Finish)
    assert events[1].reason == "error"
    assert events[1].error is not None
    assert "Upstream overloaded" in events[1].error
    assert len(events) == 2


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
    request = ModelRequest(
        system="You are terse.",
        messages=(
            UserMessage((TextContent("Weather in Lisbon?"),)),
            AssistantMessage((
                ReasoningContent("The user wants weather.", {"anthropic": {"signature": "sig"}}),
                TextContent("Let me check."),
                ToolCallContent("call_1", "get_weather", {"city": "Lisbon"}),
            )),
            ToolMessage((ToolResultContent("call_1", "get_weather", {"temp_c": 21}),)),
            UserMessage((TextContent("Thanks"),)),
        ),
        tools=(WEATHER,),
        settings=ModelSettings(max_output_tokens=100, temperature=0.3, seed=5, stop_sequences=("END",),
                               tool_choice="required", headers={"x-trace": "t-9"}),
    )
    await collect(model(fake_llm, "text").stream(request))

    body = fake_llm.last_body()
    assert fake_llm.requests[-1].headers["x-trace"] == "t-9"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Lisbon?"},
        # pydantic-ai's own choice: reasoning from another provider goes back to OpenAI as <think> text.
        {"role": "assistant", "content": "<think>\nThe user wants weather.\n</think>\n\nLet me check.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Lisbon"}'}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c":21}'},
        {"role": "user", "content": "Thanks"},
    ]
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert body["tool_choice"] == "required"
    assert (body["max_completion_tokens"], body["temperature"], body["seed"], body["stop"]) == (100, 0.3, 5, ["END"])


def test_a_string_id_with_a_missing_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(ConfigurationError, match=r"pydantic-ai cannot make a model of 'openai:gpt-4\.1-mini'"):
        PydanticAIModel("openai:gpt-4.1-mini")


def test_without_pydantic_ai_it_asks_for_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)  # imports of it now fail, as when not installed

    with pytest.raises(ConfigurationError, match=r"pip install 'think-agents\[providers\]'"):
        PydanticAIModel("openai:gpt-4.1-mini")


def test_the_module_imports_without_pydantic_ai() -> None:
    code = (
        "import sys; sys.modules['pydantic_ai'] = None\n"
        "import think.models.pydantic_ai, think.models.registry\n"
        "assert 'pydantic_ai' not in {name.split('.')[0] for name, m in sys.modules.items() if m is not None}\n"
        "print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)

    assert result.stdout.strip() == "ok", result.stderr
