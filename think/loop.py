"""The agentic loop: stream a model step, run its tool calls, repeat until there is an answer.

`run_loop` pushes AI SDK UI message chunks into `emit`, in the AI SDK's order: `start`, then per
step `start-step`, reasoning/text/tool chunks, tool outputs, `finish-step`, and finally `finish`.
It stops when a step ends without tool calls, at `max_steps`, when a call waits for a person
(approval) or for the client (a tool without `execute`), or when the model fails (an `error`
chunk, no `finish`). Cancellation propagates: the caller owns the cancel scope and saves whatever
the emitted chunks built so far.

A step's model stream is `think.step_stream`; its tool calls are `think.tools.calls`.
"""

from __future__ import annotations

import inspect
import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Literal

from think.hook_results import step_config
from think.hooks import LoopHooks, NoHooks, StepContext, StepRecord, StopCondition, ToolCall
from think.messages import JSONObject
from think.models.base import (
    AssistantMessage,
    Model,
    ModelMessage,
    ModelRequest,
    ToolCallContent,
    ToolResultContent,
    tool_results_message,
)
from think.models.events import Finish, FinishReason, Usage
from think.step_stream import StepStream, stream_step
from think.tools.calls import Emit, PendingCall, run_calls
from think.tools.run import ToolResult
from think.tools.tool import Tool, ToolContext

if TYPE_CHECKING:
    from think.usage.meter import UsageMeter

__all__ = ["Emit", "LoopResult", "LoopStatus", "ResolveModel", "run_loop"]

log = logging.getLogger("think.loop")

ResolveModel = Callable[[Model | str], Model]
LoopStatus = Literal["completed", "error", "awaiting-approval", "awaiting-client", "max-steps", "steered"]


@dataclass(kw_only=True)
class LoopResult:
    status: LoopStatus
    steps: list[StepRecord] = field(default_factory=list)
    finish_reason: FinishReason = "other"
    error: str | None = None
    usage: Usage | None = None


def _add_usage(a: Usage | None, b: Usage | None) -> Usage | None:
    if a is None or b is None:
        return a or b

    def s(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    return Usage(s(a.input_tokens, b.input_tokens), s(a.output_tokens, b.output_tokens),
                 s(a.reasoning_tokens, b.reasoning_tokens), s(a.cached_input_tokens, b.cached_input_tokens))


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
    usage: UsageMeter | None = None,
    steer: Callable[[], bool] | None = None,
) -> LoopResult:
    """Run model steps and tool calls until the turn has an answer. See the module docstring.

    `message_id` goes into the `start` chunk (None for a continuation of an earlier message).
    `tool_context` is the template for every `ToolContext` (request id, transcript, agent).
    `approved_calls` are calls a person approved after an earlier turn stopped for them: they run
    first (their outputs refer to parts of the earlier message), and the model sees their results.
    `stop_when` conditions end the turn after a step for which one is true (besides `max_steps`);
    `max_retries` retries a model call that fails before any content with a retryable error.
    `usage` adds up each call's usage; with it, the `finish` chunk carries the message's usage in
    `messageMetadata` (see `think.usage`). `steer` is asked at each step boundary (the step's
    tool calls have finished, another model call would follow): True ends the loop there with
    status `steered`, for a user message steered into the turn (`think.turns.steer`).
    """
    hooks = hooks or NoHooks()
    result = LoopResult(status="completed")
    messages: list[ModelMessage] = list(request.messages)
    base_ctx = tool_context or ToolContext(tool_call_id="", tool_name="")
    part_ids = itertools.count()

    await emit({"type": "start", "messageId": message_id} if message_id else {"type": "start"})
    if approved_calls:
        pending = [PendingCall(c.id, c.name, input=c.input, tool=tools.get(c.name)) for c in approved_calls]
        for c in pending:
            if c.tool is None or c.tool.execute is None:
                c.error = f"Tool {c.name!r} is not available to run after its approval."
        outcomes = await run_calls(pending, 0, hooks, base_ctx, tuple(messages), emit)
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
        # One snapshot of the transcript serves the hook, the model call and the step's tools (a
        # copy of a long conversation each time would cost in proportion to its length).
        snapshot = request.messages if step_number == 0 and not approved_calls else tuple(messages)
        config = step_config(await hooks.before_step(StepContext(
            step_number=step_number, steps=tuple(result.steps), model=model, system=system,
            messages=snapshot, request_id=base_ctx.request_id, trigger=base_ctx.trigger,
            signal=base_ctx.signal)))
        if config is not None:
            if config.model is not None:
                step_model = resolve_model(config.model) if resolve_model else config.model  # type: ignore[assignment]
            if config.system is not None:
                system = config.system
            if config.messages is not None:
                messages = list(config.messages)
                snapshot = tuple(messages)
            if config.active_tools is not None:
                allowed = set(config.active_tools)
                step_tools = {k: v for k, v in tools.items() if k in allowed}
            if config.tool_choice is not None:
                step_request = replace(request, settings=replace(request.settings, tool_choice=config.tool_choice))
            if config.provider_options is not None:
                options = {**(step_request.settings.provider_options or {}), **config.provider_options}
                step_request = replace(step_request, settings=replace(step_request.settings, provider_options=options))
        specs = tuple(spec for spec in request.tools if spec.name in step_tools)
        call_request = replace(step_request, system=system, messages=snapshot, tools=specs)

        await emit({"type": "start-step"})
        stream = await stream_step(step_model, call_request, max_retries,
                                    partial(StepStream, step_number, step_tools, emit, part_ids, send_reasoning,
                                            base_ctx))
        step, finish, calls = stream.step, stream.finish, stream.calls
        if finish is None:
            finish = Finish("error", error="the model stream ended without a finish event")
        step.finish_reason, step.usage, step.model = finish.reason, finish.usage, step_model.model_id
        result.usage = _add_usage(result.usage, finish.usage)
        if usage is not None:
            usage.add(step_model.model_id, finish.usage)
        if finish.reason == "error":
            result.steps.append(step)
            result.status, result.finish_reason = "error", "error"
            result.error = finish.error or "The model failed without saying why."
            await emit({"type": "error", "errorText": result.error})
            return result

        outcomes = await run_calls(list(calls.values()), step_number, hooks, base_ctx, snapshot, emit)
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
        if steer is not None and steer():
            result.status = "steered"
            break
        if await _should_stop(stop_when, result.steps):
            break
        if step_number + 1 >= max_steps:
            result.status = "max-steps"
            break
    finish_chunk: JSONObject = {"type": "finish", "finishReason": result.finish_reason}
    if usage is not None and usage.turn.steps:
        finish_chunk["messageMetadata"] = {"usage": await usage.final()}
    await emit(finish_chunk)
    return result


async def _should_stop(conditions: Sequence[StopCondition], steps: Sequence[StepRecord]) -> bool:
    for condition in conditions:
        verdict = condition(tuple(steps))
        if inspect.isawaitable(verdict):
            verdict = await verdict
        if verdict:
            return True
    return False


