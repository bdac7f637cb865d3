"""The agentic loop: stream a model step, run its tool calls, repeat until there is an answer.

`run_loop` pushes AI SDK UI message chunks into `emit`, in the AI SDK's order: `start`, then per
step `start-step`, reasoning/text/tool chunks, tool outputs, `finish-step`, and finally `finish`.
It stops when a step ends without tool calls, at `max_steps`, when a call waits for a person
(approval) or for the client (a tool without `execute`), or when the model fails (an `error`
chunk, no `finish`). Cancellation propagates: the caller owns the cancel scope and saves whatever
the emitted chunks built so far.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anyio
import orjson

from think.hooks import (
    Allow,
    Block,
    LoopHooks,
    NoHooks,
    StepContext,
    StepRecord,
    Substitute,
    ToolCall,
    ToolCallContext,
    ToolCallResultContext,
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
    ToolMessage,
    ToolResultContent,
)
from think.models.events import (
    Finish,
    FinishReason,
    ReasoningDelta,
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
) -> LoopResult:
    """Run model steps and tool calls until the turn has an answer. See the module docstring.

    `message_id` goes into the `start` chunk (None for a continuation of an earlier message).
    `tool_context` is the template for every `ToolContext` (request id, transcript, agent).
    """
    hooks = hooks or NoHooks()
    result = LoopResult(status="completed")
    messages: list[ModelMessage] = list(request.messages)
    base_ctx = tool_context or ToolContext(tool_call_id="", tool_name="")
    text_ids = 0

    async def send(chunk: JSONObject) -> None:
        await emit(chunk)

    await send({"type": "start", "messageId": message_id} if message_id else {"type": "start"})
    for step_number in range(max(1, max_steps)):
        step = StepRecord(step_number=step_number)
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
        specs = tuple(spec for spec in request.tools if spec.name in step_tools)
        call_request = replace(step_request, system=system, messages=tuple(messages), tools=specs)

        await send({"type": "start-step"})
        open_kind: str | None = None  # "text" | "reasoning"
        open_id = ""
        calls: dict[str, _Call] = {}
        content: list[AssistantContent] = []
        finish: Finish | None = None

        async def close_open() -> None:
            nonlocal open_kind
            if open_kind is not None:
                if open_kind == "text" or send_reasoning:
                    await send({"type": f"{open_kind}-end", "id": open_id})
                open_kind = None

        reasoning_meta: dict[str, Any] | None = None
        async for event in step_model.stream(call_request):
            match event:
                case TextDelta(text=delta):
                    if open_kind != "text":
                        await close_open()
                        open_kind, open_id = "text", f"txt-{text_ids}"
                        text_ids += 1
                        await send({"type": "text-start", "id": open_id})
                    step.text += delta
                    await send({"type": "text-delta", "id": open_id, "delta": delta})
                case ReasoningDelta(text=delta, provider_metadata=meta):
                    if open_kind != "reasoning":
                        await close_open()
                        open_kind, open_id = "reasoning", f"rsn-{text_ids}"
                        text_ids += 1
                        if send_reasoning:
                            await send({"type": "reasoning-start", "id": open_id})
                    step.reasoning += delta
                    if meta:
                        reasoning_meta = {**(reasoning_meta or {}), **meta}
                    if send_reasoning:
                        chunk: JSONObject = {"type": "reasoning-delta", "id": open_id, "delta": delta}
                        if meta:
                            chunk["providerMetadata"] = meta
                        await send(chunk)
                case ToolCallStart(id=call_id, name=name):
                    await close_open()
                    calls[call_id] = _Call(call_id, name, tool=step_tools.get(name))
                    start: JSONObject = {"type": "tool-input-start", "toolCallId": call_id, "toolName": name}
                    if name not in step_tools:
                        start["dynamic"] = True
                    await send(start)
                case ToolCallDelta(id=call_id, arguments_delta=delta):
                    if call_id in calls:
                        calls[call_id].raw += delta
                    await send({"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": delta})
                case ToolCallReady(id=call_id, name=name, arguments=raw):
                    await close_open()
                    if call_id not in calls:
                        calls[call_id] = _Call(call_id, name, tool=step_tools.get(name))
                        start = {"type": "tool-input-start", "toolCallId": call_id, "toolName": name}
                        if name not in step_tools:
                            start["dynamic"] = True
                        await send(start)
                    c = calls[call_id]
                    c.raw = raw
                    await _announce_call(c, step_tools, send)
                case Finish():
                    finish = event
        await close_open()
        if step.reasoning or reasoning_meta:
            content.append(ReasoningContent(step.reasoning, reasoning_meta))
        if step.text:
            content.append(TextContent(step.text))

        if finish is None:
            finish = Finish("error", error="the model stream ended without a finish event")
        step.finish_reason = finish.reason
        step.usage = finish.usage
        result.usage = _add_usage(result.usage, finish.usage)
        if finish.reason == "error":
            result.steps.append(step)
            result.status, result.finish_reason = "error", "error"
            result.error = finish.error or "The model failed without saying why."
            await send({"type": "error", "errorText": result.error})
            return result

        # Run this step's server tool calls, in parallel; outputs reach the UI as they finish.
        ready = [c for c in calls.values() if c.input is not None and not c.waits and c.error is None]
        outcomes: dict[str, ToolResult] = {}
        messages_snapshot = tuple(messages)

        async def run_one(c: _Call) -> None:
            outcomes[c.id] = await _execute(c, step_number, hooks, base_ctx, messages_snapshot, send)

        if len(ready) == 1:
            await run_one(ready[0])
        elif ready:
            async with anyio.create_task_group() as group:
                for c in ready:
                    group.start_soon(run_one, c)

        results: list[ToolResultContent] = []
        for c in calls.values():
            step.tool_calls.append(ToolCall(id=c.id, name=c.name, input=c.input or {}))
            if c.waits:
                continue
            content.append(ToolCallContent(c.id, c.name, c.input or {}))
            if c.error is not None:
                outcome = ToolResult.failed(c.id, c.name, c.error)
            else:
                outcome = outcomes[c.id]
            step.tool_results.append(outcome)
            results.append(ToolResultContent(c.id, c.name, outcome.error if outcome.is_error else outcome.output,
                                             outcome.is_error))
        await send({"type": "finish-step"})
        await hooks.on_step_finish(step)
        result.steps.append(step)
        if content:
            messages.append(AssistantMessage(tuple(content)))
        if results:
            messages.append(ToolMessage(tuple(results)))

        waiting = {c.waits for c in calls.values() if c.waits}
        result.finish_reason = finish.reason
        if waiting:
            result.status = "awaiting-approval" if "approval" in waiting else "awaiting-client"
            result.finish_reason = "tool-calls"
            break
        if not calls:
            break
        if step_number + 1 >= max_steps:
            result.status = "max-steps"
            break
    await send({"type": "finish", "finishReason": result.finish_reason})
    return result


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
        available = ", ".join(sorted(tools)) or "none"
        c.error = f"Model tried to call unavailable tool '{c.name}'. Available tools: {available}."
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
    await send({"type": "tool-input-available", "toolCallId": c.id, "toolName": c.name,
                "input": _json_safe(c.input)})
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
    try:
        decision = await hooks.before_tool_call(ToolCallContext(call=call, step_number=step_number,
                                                                messages=messages,
                                                                request_id=base_ctx.request_id))
    except Exception as exc:
        outcome = ToolResult.failed(c.id, c.name, f"{type(exc).__name__}: {exc}")
        decision = None
    else:
        outcome = None
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
    if outcome.is_error:
        await send({"type": "tool-output-error", "toolCallId": c.id, "errorText": outcome.error})
    else:
        await send({"type": "tool-output-available", "toolCallId": c.id, "output": outcome.output})
    try:
        await hooks.after_tool_call(ToolCallResultContext(
            call=call, step_number=step_number, duration_ms=(time.perf_counter() - started) * 1000,
            success=not outcome.is_error, output=outcome.output, error=outcome.error))
    except Exception:
        log.exception("after_tool_call raised; the tool result stands")
    return outcome
