"""A real HTTP server on 127.0.0.1 that speaks like the model APIs our adapters call.

Routes, by path suffix:
- `POST …/chat/completions`: OpenAI Chat Completions SSE;
- `POST …/v1/messages`: Anthropic Messages SSE;
- `GET …/api/tags`: Ollama's model list.

The scenario is the request's `model` (see `OPENAI` and `ANTHROPIC`; unknown names get "text").
`bench-N` streams N text deltas. Every request is recorded, and so is how each slow stream ended:
with `slow`, the server sees the client hang up.

Run it as a program (`python -m tests.models.fake_llm_server`) to serve it in its own process; it
prints `PORT <n>` once listening and stops when its standard input closes.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson
import uvicorn

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

SLOW_CHUNKS = 200
SLOW_DELAY = 0.02

# ---- OpenAI Chat Completions --------------------------------------------------------------------


def oai(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "fake",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    chunk.update(extra)
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def oai_usage(prompt: int, completion: int, *, reasoning: int = 0, cached: int = 0) -> bytes:
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    return b"data: " + orjson.dumps({"id": "chatcmpl-fake", "choices": [], "usage": usage}) + b"\n\n"


DONE = b"data: [DONE]\n\n"
ROLE = oai({"role": "assistant", "content": ""})


def oai_call(index: int, *, id: str | None = None, name: str | None = None, args: str = "") -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id is not None:
        call.update(id=id, type="function")
        call["function"]["name"] = name
    return call


def oai_reasoning(field: str) -> list[bytes]:
    return [
        ROLE,
        oai({field: "Think "}),
        oai({field: "hard."}),
        oai({"content": "Answer."}),
        oai(finish="stop"),
        oai_usage(20, 9, reasoning=7),
        DONE,
    ]


def oai_text(*pieces: str, finish: str = "stop") -> list[bytes]:
    return [ROLE, *(oai({"content": piece}) for piece in pieces), oai(finish=finish), oai_usage(12, 3, cached=4), DONE]


OPENAI: dict[str, list[bytes]] = {
    "text": oai_text("Hello", ", world", "!"),
    "tools": [
        ROLE,
        oai({"content": "Checking."}),
        oai({"tool_calls": [oai_call(0, id="call_1", name="get_weather")]}),
        oai({"tool_calls": [oai_call(0, args='{"city": ')]}),
        oai({"tool_calls": [oai_call(0, args='"Lisbon"}')]}),
        oai({"tool_calls": [oai_call(1, id="call_2", name="get_time", args='{"tz":')]}),
        oai({"tool_calls": [oai_call(1, args=' "UTC"}')]}),
        oai(finish="tool_calls"),
        oai_usage(30, 25),
        DONE,
    ],
    # Ollama-style: a whole call in one chunk, no `index`, and "stop" as the finish reason.
    "tools-no-index": [
        oai({"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_a", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
        ]}),
        oai(finish="stop"),
        DONE,
    ],
    "reasoning_content": oai_reasoning("reasoning_content"),
    "reasoning": oai_reasoning("reasoning"),
    "length": oai_text("Cut", finish="length"),
    "content_filter": oai_text("No", finish="content_filter"),
    "odd-finish": oai_text("Hm", finish="eos"),
    "error-mid": [
        ROLE,
        oai({"content": "Partial"}),
        b'data: {"error": {"message": "Upstream overloaded", "type": "server_error", "code": 503}}\n\n',
        DONE,
    ],
    "malformed": [ROLE, oai({"content": "Partial"}), b"data: {not json\n\n", DONE],
    "truncated": [ROLE, oai({"content": "Partial"})],
    "slow": [ROLE, *(oai({"content": f"tick{i} "}) for i in range(SLOW_CHUNKS)), oai(finish="stop"), DONE],
}

OPENAI_ERRORS: dict[str, tuple[int, bytes, bytes]] = {
    "http-401": (401, b"application/json", orjson.dumps({"error": {
        "message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}})),
    "http-429": (429, b"application/json", orjson.dumps({"error": {
        "message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}})),
    "http-500": (500, b"application/json", orjson.dumps({"error": {
        "message": "The server had an error while processing your request", "type": "server_error"}})),
    "http-502": (502, b"text/html", b"<html>Bad gateway</html>"),
}

# ---- Anthropic Messages -------------------------------------------------------------------------


def ant(kind: str, **payload: Any) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps({"type": kind, **payload}) + b"\n\n"


def ant_start(input_tokens: int = 10, cache_read: int = 0) -> bytes:
    usage = {"input_tokens": input_tokens, "cache_read_input_tokens": cache_read,
             "cache_creation_input_tokens": 0, "output_tokens": 1}
    message = {"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": usage}
    return ant("message_start", message=message)


def ant_delta(index: int, **delta: Any) -> bytes:
    return ant("content_block_delta", index=index, delta=delta)


def ant_text_block(index: int, *pieces: str) -> list[bytes]:
    return [
        ant("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *(ant_delta(index, type="text_delta", text=piece) for piece in pieces),
        ant("content_block_stop", index=index),
    ]


def ant_end(stop_reason: str, output_tokens: int) -> list[bytes]:
    return [
        ant("message_delta", delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage={"output_tokens": output_tokens}),
        ant("message_stop"),
    ]


def ant_text(*pieces: str, stop_reason: str = "end_turn") -> list[bytes]:
    return [ant_start(), *ant_text_block(0, *pieces), *ant_end(stop_reason, 5)]


ANTHROPIC: dict[str, list[bytes]] = {
    "text": ant_text("Hello", ", world"),
    "thinking-tools": [
        ant_start(input_tokens=20, cache_read=5),
        ant("ping"),
        ant("content_block_start", index=0, content_block={"type": "thinking", "thinking": "", "signature": ""}),
        ant_delta(0, type="thinking_delta", thinking="Let me "),
        ant_delta(0, type="thinking_delta", thinking="think."),
        ant_delta(0, type="signature_delta", signature="sig-abc"),
        ant("content_block_stop", index=0),
        *ant_text_block(1, "I'll check."),
        ant("content_block_start", index=2,
            content_block={"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}),
        ant_delta(2, type="input_json_delta", partial_json=""),
        ant_delta(2, type="input_json_delta", partial_json='{"city": '),
        ant_delta(2, type="input_json_delta", partial_json='"Lis'),
        ant_delta(2, type="input_json_delta", partial_json='bon"}'),
        ant("content_block_stop", index=2),
        *ant_end("tool_use", 42),
    ],
    "redacted": [
        ant_start(),
        ant("content_block_start", index=0, content_block={"type": "redacted_thinking", "data": "opaque=="}),
        ant("content_block_stop", index=0),
        *ant_text_block(1, "Done."),
        *ant_end("end_turn", 3),
    ],
    "empty-tool": [
        ant_start(),
        ant("content_block_start", index=0,
            content_block={"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}}),
        ant("content_block_stop", index=0),
        *ant_end("tool_use", 4),
    ],
    "max_tokens": ant_text("Cut", stop_reason="max_tokens"),
    "refusal": ant_text("No", stop_reason="refusal"),
    "pause_turn": ant_text("Wait", stop_reason="pause_turn"),
    "error-mid": [
        ant_start(),
        *ant_text_block(0, "Partial"),
        ant("error", error={"type": "overloaded_error", "message": "Overloaded"}),
    ],
    "truncated": [ant_start(), *ant_text_block(0, "Partial")],
    "slow": [
        ant_start(),
        ant("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        *(ant_delta(0, type="text_delta", text=f"tick{i} ") for i in range(SLOW_CHUNKS)),
        ant("content_block_stop", index=0),
        *ant_end("end_turn", SLOW_CHUNKS),
    ],
}


def ant_error(status: int, kind: str, message: str) -> tuple[int, bytes, bytes]:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return status, b"application/json", orjson.dumps(body)


ANTHROPIC_ERRORS: dict[str, tuple[int, bytes, bytes]] = {
    "http-401": ant_error(401, "authentication_error", "invalid x-api-key"),
    "http-429": ant_error(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit"),
    "http-500": ant_error(500, "api_error", "Internal server error"),
    "http-529": ant_error(529, "overloaded_error", "Overloaded"),
}

OLLAMA_TAGS = {"models": [{"name": "qwen3:8b", "model": "qwen3:8b"}, {"name": "llama3.2:latest"}]}


def bench_openai(n: int) -> list[bytes]:
    return [ROLE, *(oai({"content": "tok "}) for _ in range(n)), oai(finish="stop"), oai_usage(10, n), DONE]


def bench_anthropic(n: int) -> list[bytes]:
    return [
        ant_start(),
        ant("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        *(ant_delta(0, type="text_delta", text="tok ") for _ in range(n)),
        ant("content_block_stop", index=0),
        *ant_end("end_turn", n),
    ]


# ---- the server ---------------------------------------------------------------------------------


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    query: str = ""


@dataclass
class StreamEnd:
    """How a slow stream ended: after `sent` chunks, with the client gone or not."""

    model: str
    sent: int
    disconnected: bool


@dataclass
class FakeLLMServer:
    """The ASGI app, with what it has seen. `url` is set once it is serving."""

    url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    stream_ends: list[StreamEnd] = field(default_factory=list)
    stream_ended: threading.Event = field(default_factory=threading.Event)
    _bench_cache: dict[tuple[str, int], list[bytes]] = field(default_factory=dict)

    def reset(self) -> None:
        self.requests.clear()
        self.stream_ends.clear()
        self.stream_ended.clear()

    def last_body(self) -> Any:
        return self.requests[-1].body

    def wait_stream_end(self, timeout: float = 5.0) -> StreamEnd:
        """Block until a slow stream ends (on the server side), then return how."""
        if not self.stream_ended.wait(timeout):
            raise TimeoutError("the server saw no slow stream end")
        return self.stream_ends[-1]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        payload = orjson.loads(body) if body else None
        path: str = scope["path"]
        if not path.endswith("/api/tags"):  # the Ollama probe is not a model request
            self.requests.append(Recorded(scope["method"], path, headers, payload,
                                          scope.get("query_string", b"").decode("latin-1")))
        model = payload.get("model", "") if isinstance(payload, dict) else ""
        if path.endswith("/chat/completions"):
            await self._respond(send, receive, model, OPENAI, OPENAI_ERRORS, bench_openai)
        elif path.endswith("/v1/messages"):
            await self._respond(send, receive, model, ANTHROPIC, ANTHROPIC_ERRORS, bench_anthropic)
        elif path.endswith("/api/tags"):
            await _send_body(send, 200, b"application/json", orjson.dumps(OLLAMA_TAGS))
        else:
            await _send_body(send, 404, b"text/plain", b"no such route")

    async def _respond(
        self,
        send: Send,
        receive: Receive,
        model: str,
        scenarios: dict[str, list[bytes]],
        errors: dict[str, tuple[int, bytes, bytes]],
        bench: Callable[[int], list[bytes]],
    ) -> None:
        if model in errors:
            await _send_body(send, *errors[model])
        elif model.startswith("bench-"):
            key = (model, id(bench))
            if key not in self._bench_cache:
                self._bench_cache[key] = bench(int(model.removeprefix("bench-")))
            await _send_sse(send, self._bench_cache[key])
        elif model == "slow":
            await self._send_watched(send, receive, model, scenarios["slow"], delay=SLOW_DELAY)
        elif model == "hang":  # headers, then nothing: for read timeouts
            await self._send_watched(send, receive, model, [], delay=0, hang=True)
        else:
            await _send_sse(send, scenarios.get(model, scenarios["text"]))

    async def _send_watched(
        self, send: Send, receive: Receive, model: str, chunks: list[bytes], *, delay: float, hang: bool = False
    ) -> None:
        """Stream `chunks` with a delay between them, recording whether the client hung up first."""
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", SSE)]})
        sent = 0
        done = gone = False

        async def watch(scope: anyio.CancelScope) -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            if not done:
                gone = True
                scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(watch, group.cancel_scope)
            try:
                for chunk in chunks:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    sent += 1
                    await anyio.sleep(delay)
                if hang:
                    await anyio.sleep(60)
                done = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError:
                gone = True
            group.cancel_scope.cancel()
        self.stream_ends.append(StreamEnd(model, sent, gone))
        self.stream_ended.set()


SSE = b"text/event-stream"


async def _send_body(send: Send, status: int, content_type: bytes, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type)]})
    await send({"type": "http.response.body", "body": body})


async def _send_sse(send: Send, chunks: list[bytes]) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", SSE)]})
    for chunk in chunks:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def _listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@contextmanager
def serve_in_thread(app: FakeLLMServer) -> Iterator[FakeLLMServer]:
    """Serve `app` from a background thread (its own event loop) until the block ends."""
    sock = _listening_socket()
    config = uvicorn.Config(app, loop="asyncio", http="h11", lifespan="off", log_level="warning",
                            timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the fake LLM server did not start")
        time.sleep(0.01)
    app.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        yield app
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def main() -> None:
    """Serve in this process (uvloop, httptools) until standard input closes."""
    sock = _listening_socket()
    server = uvicorn.Server(uvicorn.Config(FakeLLMServer(), lifespan="off", log_level="warning"))
    threading.Thread(target=lambda: (sys.stdin.read(), setattr(server, "should_exit", True)), daemon=True).start()
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
