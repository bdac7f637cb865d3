"""`ScriptedModel`: a model whose replies are written in advance, for tests and demos.

    model = ScriptedModel([
        [reasoning("The user wants a sum."), call("add", a=2, b=2)],   # first model call
        "2 + 2 = 4.",                                                   # second model call
    ])

Each entry of the script answers one model call, in order. An entry is a string (streamed as
text, a word at a time), one item, or a list of items: `text(...)`, `reasoning(...)`,
`call(name, **arguments)`, `error(message)`, `delay(seconds)`, `HANG` (wait until cancelled) and
`usage(input=…, output=…, reasoning=…, cached=…)`, the usage that call reports (by default: 10
input tokens per message of the request, an output token per text delta).
Instead of a list, pass a function of the `ModelRequest` that returns an entry: the reply can
then depend on the prompt. Every request is kept in `model.requests` for assertions.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import anyio
import orjson

from think.models.base import ModelRequest
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


@dataclass(frozen=True)
class Text:
    text: str
    chunks: int | None = None
    """Split into this many deltas; by default a delta per word."""


@dataclass(frozen=True)
class Reasoning:
    text: str
    signature: str | None = None


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any] | str
    """A dict, or raw text (which may be malformed JSON, to test how that is handled)."""
    id: str | None = None
    chunks: int = 2


@dataclass(frozen=True)
class Error:
    message: str
    status: int | None = None


@dataclass(frozen=True)
class Delay:
    seconds: float


@dataclass(frozen=True)
class Hang:
    """Wait until the turn is cancelled."""


HANG = Hang()

@dataclass(frozen=True)
class ReportUsage:
    usage: Usage


Item: TypeAlias = Text | Reasoning | Call | Error | Delay | Hang | ReportUsage
Reply: TypeAlias = str | Item | Sequence["str | Item"]
Script: TypeAlias = Sequence[Reply] | Callable[[ModelRequest], Reply]


def text(value: str, *, chunks: int | None = None) -> Text:
    return Text(value, chunks)


def reasoning(value: str, *, signature: str | None = None) -> Reasoning:
    return Reasoning(value, signature)


def call(name: str, /, *, id: str | None = None, raw: str | None = None, **arguments: Any) -> Call:
    """A tool call; `raw` gives the argument text verbatim instead of `arguments`."""
    return Call(name, raw if raw is not None else arguments, id)


def error(message: str, *, status: int | None = None) -> Error:
    return Error(message, status)


def delay(seconds: float) -> Delay:
    return Delay(seconds)


def usage(*, input: int | None = None, output: int | None = None, reasoning: int | None = None,
          cached: int | None = None) -> ReportUsage:
    """The usage the call's `Finish` reports, instead of the default estimate."""
    return ReportUsage(Usage(input_tokens=input, output_tokens=output, reasoning_tokens=reasoning,
                             cached_input_tokens=cached))


def _split(value: str, parts: int | None) -> list[str]:
    if not value:
        return []
    if parts is None:
        words = value.split(" ")
        return [w + " " for w in words[:-1]] + ([words[-1]] if words[-1] else [])
    size = max(1, -(-len(value) // max(1, parts)))
    return [value[i : i + size] for i in range(0, len(value), size)]


@dataclass
class ScriptedModel:
    """A `Model` that replays a script. See the module docstring."""

    script: Script
    chunk_delay: float = 0.0
    """Seconds to wait before each streamed event (0: no wait at all, not even a checkpoint)."""
    model_id: str = "scripted"
    requests: list[ModelRequest] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=itertools.count, repr=False)

    def _reply_for(self, request: ModelRequest) -> Reply | None:
        if callable(self.script):
            return self.script(request)
        index = len(self.requests) - 1
        return self.script[index] if index < len(self.script) else None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        reply = self._reply_for(request)
        if reply is None:
            yield Finish("error", error=f"ScriptedModel: no reply scripted for call #{len(self.requests)}")
            return
        items: Sequence[str | Item] = [reply] if isinstance(reply, str | Item) else reply
        called = False
        out_tokens = 0
        reported: Usage | None = None
        for item in items:
            if isinstance(item, str):
                item = Text(item)
            match item:
                case Text(text=value, chunks=parts):
                    for piece in _split(value, parts):
                        await self._pace()
                        out_tokens += 1
                        yield TextDelta(piece)
                case Reasoning(text=value, signature=signature):
                    for piece in _split(value, None):
                        await self._pace()
                        yield ReasoningDelta(piece)
                    if signature is not None:
                        yield ReasoningDelta("", {"anthropic": {"signature": signature}})
                case Call(name=name, arguments=arguments, id=call_id, chunks=parts):
                    called = True
                    call_id = call_id or f"call_{next(self._ids)}"
                    raw = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
                    await self._pace()
                    yield ToolCallStart(call_id, name)
                    for piece in _split(raw, parts):
                        await self._pace()
                        yield ToolCallDelta(call_id, piece)
                    yield ToolCallReady(call_id, name, raw)
                case Error(message=message, status=status):
                    await self._pace()
                    yield Finish("error", error=message, status=status)
                    return
                case Delay(seconds=seconds):
                    await anyio.sleep(seconds)
                case Hang():
                    await anyio.sleep_forever()
                case ReportUsage(usage=given):
                    reported = given
        used = reported or Usage(input_tokens=len(request.messages) * 10, output_tokens=out_tokens)
        yield Finish("tool-calls" if called else "stop", usage=used)

    async def _pace(self) -> None:
        if self.chunk_delay:
            await anyio.sleep(self.chunk_delay)
