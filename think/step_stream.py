"""One model step: stream the model's events into UI chunks and collect what the step said.

`StepStream` turns `StreamEvent`s into AI SDK chunks (text and reasoning blocks with their
start/delta/end, tool input chunks) and keeps the step's content in the order the model produced
it, for the next model call. `stream_step` runs one model call through a fresh `StepStream`,
retrying a call that fails before any content.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Literal, assert_never

import anyio

from think import observe
from think.errors import ModelError
from think.hooks import StepRecord
from think.messages import JSONObject
from think.models.base import AssistantContent, Model, ModelRequest, ReasoningContent, TextContent
from think.models.events import (
    Finish,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStart,
)
from think.tools.calls import Emit, PendingCall, announce_call
from think.tools.tool import Tool, ToolContext

log = logging.getLogger("think.loop")

RETRY_INITIAL_DELAY = 2.0
"""Seconds before the first retry of a failed model call; each further retry waits twice as long."""
RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses worth a retry (besides every 5xx), as the AI SDK's `APICallError.isRetryable`."""


def _retryable(status: int | None) -> bool:
    return status is not None and (status in RETRYABLE_STATUSES or status >= 500)


async def stream_step(model: Model, request: ModelRequest, max_retries: int,
                       new_stream: Callable[[], StepStream]) -> StepStream:
    """Stream one model call; a call that fails before any content is retried (429, 5xx, a
    retryable `ModelError`) up to `max_retries` times, with exponential backoff."""
    for attempt in itertools.count():
        stream = new_stream()
        try:
            with observe.model_call(model.model_id, request) as traced:
                async for event in model.stream(request):
                    await stream.feed(event)
                traced.finished(stream.finish, stream)
        except ModelError as exc:
            if stream.started or not (exc.retryable or _retryable(exc.status)) or attempt >= max_retries:
                raise
            log.info("model call failed before any content (%s); retry %d of %d", exc, attempt + 1, max_retries)
        else:
            finish = stream.finish
            if (stream.started or finish is None or finish.reason != "error" or not _retryable(finish.status)
                    or attempt >= max_retries):
                await stream.close_open()
                return stream
            log.info("model call failed before any content (%s, status %s); retry %d of %d", finish.error,
                     finish.status, attempt + 1, max_retries)
        await anyio.sleep(RETRY_INITIAL_DELAY * 2**attempt)
    raise AssertionError("unreachable")


class StepStream:
    """Turns one step's model events into UI chunks and collects what the step said."""

    def __init__(self, step_number: int, tools: Mapping[str, Tool], emit: Emit, part_ids: Iterator[int],
                 send_reasoning: bool, tool_context: ToolContext | None = None) -> None:
        self.step = StepRecord(step_number=step_number)
        self.tool_context = tool_context
        """The turn's template `ToolContext`, for tools that decide on approval with it."""
        self.tools = tools
        self.emit = emit
        self.part_ids = part_ids
        self.send_reasoning = send_reasoning
        self.calls: dict[str, PendingCall] = {}
        self.finish: Finish | None = None
        self.blocks: list[AssistantContent] = []
        """Reasoning and text in the order the model produced them, one entry per block."""
        self.open_kind: Literal["text", "reasoning"] | None = None
        self.open_id = ""
        self.started = False
        """True once the model sent anything but its `Finish` (a retry would repeat content)."""

    async def feed(self, event: StreamEvent) -> None:
        if not isinstance(event, Finish):
            self.started = True
        match event:
            case TextDelta(text=delta):
                await self._open("text")
                self.step.text += delta
                block = self.blocks[-1]
                assert isinstance(block, TextContent)
                self.blocks[-1] = TextContent(block.text + delta)
                await self.emit({"type": "text-delta", "id": self.open_id, "delta": delta})
            case ReasoningDelta(text=delta, provider_metadata=meta):
                if self.open_kind == "reasoning" and _sealed(self.blocks[-1]):
                    await self.close_open()  # a signed block is complete: this delta starts the next one
                await self._open("reasoning")
                self.step.reasoning += delta
                block = self.blocks[-1]
                assert isinstance(block, ReasoningContent)
                merged = {**(block.provider_metadata or {}), **meta} if meta else block.provider_metadata
                self.blocks[-1] = ReasoningContent(block.text + delta, merged)
                if self.send_reasoning:
                    chunk: JSONObject = {"type": "reasoning-delta", "id": self.open_id, "delta": delta}
                    if meta:
                        chunk["providerMetadata"] = meta
                    await self.emit(chunk)
            case ToolCallStart(id=call_id, name=name):
                await self._start_call(call_id, name)
            case ToolCallDelta(id=call_id, arguments_delta=delta):
                if call_id in self.calls:
                    self.calls[call_id].raw += delta
                await self.emit({"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": delta})
            case ToolCallReady(id=call_id, name=name, arguments=raw, provider_metadata=meta):
                if call_id not in self.calls:
                    await self._start_call(call_id, name)
                await self.close_open()
                call = self.calls[call_id]
                call.raw, call.provider_metadata = raw, meta
                await announce_call(call, self.tools, self.emit, self.tool_context)
            case Finish():
                self.finish = event
            case _:
                assert_never(event)

    async def _open(self, kind: Literal["text", "reasoning"]) -> None:
        if self.open_kind == kind:
            return
        await self.close_open()
        self.open_kind, self.open_id = kind, f"{'txt' if kind == 'text' else 'rsn'}-{next(self.part_ids)}"
        self.blocks.append(TextContent("") if kind == "text" else ReasoningContent(""))
        if kind == "text" or self.send_reasoning:
            await self.emit({"type": f"{kind}-start", "id": self.open_id})

    async def close_open(self) -> None:
        if self.open_kind is not None:
            if self.open_kind == "text" or self.send_reasoning:
                await self.emit({"type": f"{self.open_kind}-end", "id": self.open_id})
            self.open_kind = None

    async def _start_call(self, call_id: str, name: str) -> None:
        await self.close_open()
        self.calls[call_id] = PendingCall(call_id, name, tool=self.tools.get(name))
        start: JSONObject = {"type": "tool-input-start", "toolCallId": call_id, "toolName": name}
        if name not in self.tools:
            start["dynamic"] = True
        await self.emit(start)

    def content(self) -> list[AssistantContent]:
        """The step's reasoning and text, as the next model call must see them."""
        kept: list[AssistantContent] = []
        for block in self.blocks:
            if ((isinstance(block, TextContent) and block.text)
                    or (isinstance(block, ReasoningContent) and (block.text or block.provider_metadata))):
                kept.append(block)
        return kept


def _sealed(block: AssistantContent) -> bool:
    """A reasoning block that carries its signature (or is redacted) is complete."""
    if not isinstance(block, ReasoningContent) or not block.provider_metadata:
        return False
    return any(isinstance(v, dict) and ("signature" in v or "redactedData" in v)
               for v in block.provider_metadata.values())
