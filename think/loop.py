"""The agentic loop: stream a model step, run its tool calls, repeat until there is an answer.

`run_loop` pushes AI SDK UI message chunks into `emit`, in the AI SDK's order: `start`, then per
step `start-step`, reasoning/text/tool chunks, tool outputs, `finish-step`, and finally `finish`.
It stops when a step ends without tool calls, at `max_steps`, when a call waits for a person
(approval) or for the client (a tool without `execute`), or when the model fails (an `error`
chunk, no `finish`). Cancellation propagates: the caller owns the cancel scope and saves whatever
the emitted chunks built so far.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal, assert_never

import anyio
import orjson

from think.errors import ModelError
from think.hooks import (
    Allow,
    Block,
    LoopHooks,
    NoHooks,
    StepContext,
    StepRecord,
    StopCondition,
    Substitute,
    ToolCall,
    ToolCallContext,
    ToolCallResultContext,
    ToolDecision,
)
from think.messages import JSONObject, new_id
from think.models.base import (
    AssistantContent,
    AssistantMessage,
    Model,
    ModelMessage,
    ModelRequest,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolResultContent,
    tool_results_message,
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
from think.tools.execute import ToolResult, run_tool
from think.tools.tool import InvalidToolInput, Tool, ToolContext

log = logging.getLogger("think.loop")

Emit = Callable[[JSONObject], Awaitable[None]]
ResolveModel = Callable[[Model | str], Model]
LoopStatus = Literal["completed", "error", "awaiting-approval", "awaiting-client", "max-steps"]
RETRY_INITIAL_DELAY = 2.0
"""Seconds before the first retry of a failed model call; each further retry waits twice as long."""
RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses worth a retry (besides every 5xx), as the AI SDK's `APICallError.isRetryable`."""


@dataclass(kw_only=True)
class LoopResult:
    status: LoopStatus
    steps: list[StepRecord] = field(default_factory=list)
    finish_reason: FinishReason = "other"
    error: str | None = None
    usage: Usage | None = None


@dataclass
class _Call:
    id: str
    name: str
    raw: str = ""
    input: JSONObject | None = None
    error: str | None = None
    tool: Tool | None = None
    waits: Literal["", "approval", "client"] = ""
    provider_metadata: dict[str, Any] | None = None


def _add_usage(a: Usage | None, b: Usage | None) -> Usage | None:
    if a is None or b is None:
        return a or b

    def s(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    return Usage(s(a.input_tokens, b.input_tokens), s(a.output_tokens, b.output_tokens),
                 s(a.reasoning_tokens, b.reasoning_tokens), s(a.cached_input_tokens, b.cached_input_tokens))


def blocked_text(name: str) -> str:
    return f'Tool "{name}" was blocked by beforeToolCall.'


async def run_loop(
    model: Model,
    request: ModelRequest,
    tools: Mapping[str, Tool],
    *,
    emit: Emit,
    hooks: LoopHooks | None = None,
    max_steps: int = 10,
    message_id: str | None = None,
    send_reasoning: bool = True,
    tool_context: ToolContext | None = None,
    resolve_model: ResolveModel | None = None,
    approved_calls: Sequence[ToolCall] = (),
    stop_when: Sequence[StopCondition] = (),
    max_retries: int = 0,
) -> LoopResult:
    """Run model steps and tool calls until the turn has an answer. See the module docstring.

    `message_id` goes into the `start` chunk (None for a continuation of an earlier message).
    `tool_context` is the template for every `ToolContext` (request id, transcript, agent).
    `approved_calls` are calls a person approved after an earlier turn stopped for them: they run
    first (their outputs refer to parts of the earlier message), and the model sees their results.
    `stop_when` conditions end the turn after a step for which one is true (besides `max_steps`);
    `max_retries` retries a model call that fails before any content with a retryable error.
    """
    hooks = hooks or NoHooks()
    result = LoopResult(status="completed")
    messages: list[ModelMessage] = list(request.messages)
    base_ctx = tool_context or ToolContext(tool_call_id="", tool_name="")
    part_ids = itertools.count()

    await emit({"type": "start", "messageId": message_id} if message_id else {"type": "start"})
    if approved_calls:
        pending = [_Call(c.id, c.name, input=c.input, tool=tools.get(c.name)) for c in approved_calls]
        for c in pending:
            if c.tool is None or c.tool.execute is None:
                c.error = f"Tool {c.name!r} is not available to run after its approval."
        outcomes = await _run_calls(pending, 0, hooks, base_ctx, tuple(messages), emit)
        for c in pending:
            if c.error is not None:
                outcomes[c.id] = ToolResult.failed(c.id, c.name, c.error)
                await emit({"type": "tool-output-error", "toolCallId": c.id, "errorText": c.error})
        messages.append(AssistantMessage(tuple(ToolCallContent(c.id, c.name, c.input or {}) for c in pending)))
        messages.extend(tool_results_message([
            ToolResultContent(c.id, c.name, o.error if o.is_error else o.output, o.is_error)
            for c in pending for o in [outcomes[c.id]]]))
    for step_number in range(max(1, max_steps)):
        step_model, system, step_tools, step_request = model, request.system, tools, request
        config = await hooks.before_step(StepContext(step_number=step_number, steps=tuple(result.steps),
                                                     model=model, system=system, messages=tuple(messages)))
        if config is not None:
            if config.model is not None:
                step_model = resolve_model(config.model) if resolve_model else config.model  # type: ignore[assignment]
            if config.system is not None:
                system = config.system
            if config.messages is not None:
                messages = list(config.messages)
            if config.active_tools is not None:
                allowed = set(config.active_tools)
                step_tools = {k: v for k, v in tools.items() if k in allowed}
            if config.tool_choice is not None:
                step_request = replace(request, settings=replace(request.settings, tool_choice=config.tool_choice))
            if config.provider_options is not None:
                options = {**(step_request.settings.provider_options or {}), **config.provider_options}
                step_request = replace(step_request, settings=replace(step_request.settings, provider_options=options))
        specs = tuple(spec for spec in request.tools if spec.name in step_tools)
        call_request = replace(step_request, system=system, messages=tuple(messages), tools=specs)

        await emit({"type": "start-step"})
        stream = await _stream_step(step_model, call_request, max_retries,
                                    partial(_StepStream, step_number, step_tools, emit, part_ids, send_reasoning))
        step, finish, calls = stream.step, stream.finish, stream.calls
        if finish is None:
            finish = Finish("error", error="the model stream ended without a finish event")
        step.finish_reason = finish.reason
        step.usage = finish.usage
        result.usage = _add_usage(result.usage, finish.usage)
        if finish.reason == "error":
            result.steps.append(step)
            result.status, result.finish_reason = "error", "error"
            result.error = finish.error or "The model failed without saying why."
            await emit({"type": "error", "errorText": result.error})
            return result

        outcomes = await _run_calls(list(calls.values()), step_number, hooks, base_ctx, tuple(messages), emit)
        content = stream.content()
        results: list[ToolResultContent] = []
        for c in calls.values():
            step.tool_calls.append(ToolCall(id=c.id, name=c.name, input=c.input or {}))
            if c.waits:
                continue
            content.append(ToolCallContent(c.id, c.name, c.input or {}, c.provider_metadata))
            outcome = ToolResult.failed(c.id, c.name, c.error) if c.error is not None else outcomes[c.id]
            step.tool_results.append(outcome)
            results.append(ToolResultContent(c.id, c.name, outcome.error if outcome.is_error else outcome.output,
                                             outcome.is_error))
        await emit({"type": "finish-step"})
        await hooks.on_step_finish(step)
        result.steps.append(step)
        if content:
            messages.append(AssistantMessage(tuple(content)))
        messages.extend(tool_results_message(results))

        waiting = {c.waits for c in calls.values() if c.waits}
        result.finish_reason = finish.reason
        if waiting:
            result.status = "awaiting-approval" if "approval" in waiting else "awaiting-client"
            result.finish_reason = "tool-calls"
            break
        if not calls:
            break
        if await _should_stop(stop_when, result.steps):
            break
        if step_number + 1 >= max_steps:
            result.status = "max-steps"
            break
    await emit({"type": "finish", "finishReason": result.finish_reason})
    return result


async def _should_stop(conditions: Sequence[StopCondition], steps: Sequence[StepRecord]) -> bool:
    for condition in conditions:
        verdict = condition(tuple(steps))
        if inspect.isawaitable(verdict):
            verdict = await verdict
        if verdict:
            return True
    return False


def _retryable(status: int | None) -> bool:
    return status is not None and (status in RETRYABLE_STATUSES or status >= 500)


async def _stream_step(model: Model, request: ModelRequest, max_retries: int,
                       new_stream: Callable[[], _StepStream]) -> _StepStream:
    """Stream one model call; a call that fails before any content is retried (429, 5xx, a
    retryable `ModelError`) up to `max_retries` times, with exponential backoff."""
    for attempt in itertools.count():
        stream = new_stream()
        try:
            async for event in model.stream(request):
                await stream.feed(event)
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


class _StepStream:
    """Turns one step's model events into UI chunks and collects what the step said."""

    def __init__(self, step_number: int, tools: Mapping[str, Tool], emit: Emit, part_ids: Iterator[int],
                 send_reasoning: bool) -> None:
        self.step = StepRecord(step_number=step_number)
        self.tools = tools
        self.emit = emit
        self.part_ids = part_ids
        self.send_reasoning = send_reasoning
        self.calls: dict[str, _Call] = {}
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
                await _announce_call(call, self.tools, self.emit)
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
        self.calls[call_id] = _Call(call_id, name, tool=self.tools.get(name))
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


async def _run_calls(calls: list[_Call], step_number: int, hooks: LoopHooks, base_ctx: ToolContext,
                     messages: Sequence[ModelMessage], emit: Emit) -> dict[str, ToolResult]:
    """Run a step's server tool calls in parallel; outputs reach the UI as they finish."""
    ready = [c for c in calls if c.input is not None and not c.waits and c.error is None]
    outcomes: dict[str, ToolResult] = {}

    async def run_one(call: _Call) -> None:
        outcomes[call.id] = await _execute(call, step_number, hooks, base_ctx, messages, emit)

    if len(ready) == 1:
        await run_one(ready[0])
    elif ready:
        async with anyio.create_task_group() as group:
            for call in ready:
                group.start_soon(run_one, call)
    return outcomes


async def _announce_call(c: _Call, tools: Mapping[str, Tool], send: Emit) -> None:
    """Parse and validate a complete call, then tell the UI what will happen to it."""
    tool = tools.get(c.name)
    try:
        parsed = orjson.loads(c.raw) if c.raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        c.error = f"Invalid JSON arguments for tool {c.name!r}: {exc}"
        parsed = None
    if parsed is not None and not isinstance(parsed, dict):
        c.error = f"Arguments for tool {c.name!r} must be a JSON object, got {type(parsed).__name__}"
    if tool is None and c.error is None:
        names = ", ".join(sorted(tools)) or "none"
        c.error = f"Model tried to call unavailable tool '{c.name}'. Available tools: {names}."
    if c.error is None and tool is not None and isinstance(parsed, dict):
        try:
            c.input = tool.check_input(parsed)
        except InvalidToolInput as exc:
            c.error = f"Invalid input for tool {c.name!r}: {exc}"
    if c.error is not None:
        c.input = parsed if isinstance(parsed, dict) else {}
        chunk: JSONObject = {"type": "tool-input-error", "toolCallId": c.id, "toolName": c.name,
                             "input": parsed if parsed is not None else c.raw, "errorText": c.error}
        if tool is None:
            chunk["dynamic"] = True
        await send(chunk)
        return
    assert tool is not None and c.input is not None
    available: JSONObject = {"type": "tool-input-available", "toolCallId": c.id, "toolName": c.name,
                             "input": _json_safe(c.input)}
    if c.provider_metadata:
        available["providerMetadata"] = c.provider_metadata
    await send(available)
    if tool.is_client_tool:
        c.waits = "client"
    elif await tool.requires_approval(c.input):
        c.waits = "approval"
        await send({"type": "tool-approval-request", "approvalId": f"approval-{new_id(12)}", "toolCallId": c.id})


def _json_safe(value: JSONObject) -> JSONObject:
    try:
        orjson.dumps(value)
    except TypeError:
        return dict(orjson.loads(orjson.dumps(value, default=str)))
    return value


async def _execute(c: _Call, step_number: int, hooks: LoopHooks, base_ctx: ToolContext,
                   messages: Sequence[ModelMessage], send: Emit) -> ToolResult:
    """Run one call through `before_tool_call`, the tool, and `after_tool_call`."""
    assert c.tool is not None and c.input is not None
    call = ToolCall(id=c.id, name=c.name, input=c.input)
    started = time.perf_counter()
    outcome: ToolResult | None = None
    decision: ToolDecision | None = None
    try:
        decision = await hooks.before_tool_call(ToolCallContext(call=call, step_number=step_number,
                                                                messages=messages,
                                                                request_id=base_ctx.request_id))
    except Exception as exc:  # a hook that raises becomes this call's error
        outcome = ToolResult.failed(c.id, c.name, f"{type(exc).__name__}: {exc}")
    if outcome is None:
        match decision:
            case Block(reason=reason):
                outcome = ToolResult.ok(c.id, c.name, reason or blocked_text(c.name))
            case Substitute(output=output):
                outcome = ToolResult.ok(c.id, c.name, output)
            case Allow() | None:
                arguments = decision.input if decision is not None and decision.input is not None else c.input
                ctx = replace(base_ctx, tool_call_id=c.id, tool_name=c.name)

                async def preliminary(value: Any) -> None:
                    await send({"type": "tool-output-available", "toolCallId": c.id, "output": value,
                                "preliminary": True})

                outcome = await run_tool(c.tool, arguments, ctx, on_preliminary=preliminary)
    try:  # before the output chunk, as the original orders them
        await hooks.after_tool_call(ToolCallResultContext(
            call=call, step_number=step_number, duration_ms=(time.perf_counter() - started) * 1000,
            success=not outcome.is_error, output=outcome.output, error=outcome.error))
    except Exception:
        log.exception("after_tool_call raised; the tool result stands")
    if outcome.is_error:
        await send({"type": "tool-output-error", "toolCallId": c.id, "errorText": outcome.error})
    else:
        await send({"type": "tool-output-available", "toolCallId": c.id, "output": outcome.output})
    return outcome
