"""The tool calls of one model step: announced to the UI as they complete, then run in parallel.

`announce_call` parses and validates a call the model finished (a `tool-input-error` chunk for
bad JSON, input nested past the depth limit, unknown tools and invalid input;
`tool-input-available` otherwise) and marks calls that
wait for a person (`tool-approval-request`) or for the client (a tool without `execute`).
`run_calls` runs the rest through `before_tool_call`, the tool and `after_tool_call`; the UI sees
each output as it finishes (an output nested past the depth limit is a tool error instead).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import anyio
import orjson

from think import observe
from think.hook_results import tool_decision
from think.hooks import (
    Allow,
    Block,
    LoopHooks,
    Substitute,
    ToolCall,
    ToolCallContext,
    ToolCallResultContext,
    ToolDecision,
)
from think.messages import JSONObject, new_id
from think.models.base import ModelMessage
from think.protocol.limits import IN_PART, TooDeep, check_depth
from think.tools.run import ToolResult, run_tool
from think.tools.tool import InvalidToolInput, Tool, ToolContext

log = logging.getLogger("think.loop")

Emit = Callable[[JSONObject], Awaitable[None]]
"""Where the loop pushes UI message chunks."""


@dataclass
class PendingCall:
    """A call the model made in this step, from its first delta to its outcome."""

    id: str
    name: str
    raw: str = ""
    input: JSONObject | None = None
    error: str | None = None
    tool: Tool | None = None
    waits: Literal["", "approval", "client"] = ""
    provider_metadata: dict[str, Any] | None = None



def blocked_text(name: str) -> str:
    """What the model is told of a call `before_tool_call` blocked without a reason."""
    return f'Tool "{name}" was blocked by beforeToolCall.'


async def run_calls(calls: list[PendingCall], step_number: int, hooks: LoopHooks, base_ctx: ToolContext,
                     messages: Sequence[ModelMessage], emit: Emit) -> dict[str, ToolResult]:
    """Run a step's server tool calls in parallel; outputs reach the UI as they finish."""
    ready = [c for c in calls if c.input is not None and not c.waits and c.error is None]
    outcomes: dict[str, ToolResult] = {}

    async def run_one(call: PendingCall) -> None:
        with observe.tool_call(call.name, call.id, call.input) as traced:
            outcome = outcomes[call.id] = await execute_call(call, step_number, hooks, base_ctx, messages, emit)
            traced.finished(error=outcome.error if outcome.is_error else None, output=outcome.output)

    if len(ready) == 1:
        await run_one(ready[0])
    elif ready:
        async with anyio.create_task_group() as group:
            for call in ready:
                group.start_soon(run_one, call)
    return outcomes


async def announce_call(c: PendingCall, tools: Mapping[str, Tool], send: Emit, ctx: ToolContext | None = None) -> None:
    """Parse and validate a complete call, then tell the UI what will happen to it."""
    tool = tools.get(c.name)
    try:
        parsed = orjson.loads(c.raw) if c.raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        c.error = f"Invalid JSON arguments for tool {c.name!r}: {exc}"
        parsed = None
    try:
        check_depth(parsed, "The input", at=IN_PART)
    except TooDeep as exc:  # kept as the raw text: the transcript must stay within the limit
        c.error = f"Invalid input for tool {c.name!r}: {exc}"
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
    elif asked := (await tool.approval_request(c.input, replace(ctx, tool_call_id=c.id, tool_name=c.name)
                                               if ctx is not None else None)
                   or await _agent_asks(ctx, ToolCall(id=c.id, name=c.name, input=c.input))):
        c.waits = "approval"
        request: JSONObject = {"type": "tool-approval-request", "approvalId": f"approval-{new_id(12)}",
                               "toolCallId": c.id}
        if isinstance(asked, dict):
            request["approvalDescriptor"] = asked
        await send(request)


async def _agent_asks(ctx: ToolContext | None, call: ToolCall) -> bool:
    """The agent's `tool_approval(call)` (a harness's `tool_approval` option), if it has one."""
    decide = getattr(ctx.agent, "tool_approval", None) if ctx is not None else None
    return bool(await decide(call)) if decide is not None else False


def _json_safe(value: JSONObject) -> JSONObject:
    try:
        orjson.dumps(value)
    except TypeError:
        return dict(orjson.loads(orjson.dumps(value, default=str)))
    return value


async def execute_call(c: PendingCall, step_number: int, hooks: LoopHooks, base_ctx: ToolContext,
                   messages: Sequence[ModelMessage], send: Emit) -> ToolResult:
    """Run one call through `before_tool_call`, the tool, and `after_tool_call`."""
    assert c.tool is not None and c.input is not None
    call = ToolCall(id=c.id, name=c.name, input=c.input)
    started = time.perf_counter()
    outcome: ToolResult | None = None
    decision: ToolDecision | None = None
    try:
        decision = tool_decision(await hooks.before_tool_call(ToolCallContext(
            call=call, step_number=step_number, messages=messages, request_id=base_ctx.request_id,
            trigger=base_ctx.trigger, signal=base_ctx.signal)))
    except Exception as exc:  # a hook that raises (or answers nonsense) becomes this call's error
        log.warning("before_tool_call for %s (%s) failed: %s", c.name, c.id, exc)
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
                    try:
                        check_depth(value, "A preliminary output", at=IN_PART)
                    except TooDeep:
                        return  # not shown; the final output decides what the call returned
                    await send({"type": "tool-output-available", "toolCallId": c.id, "output": value,
                                "preliminary": True})

                outcome = await run_tool(c.tool, arguments, ctx, on_preliminary=preliminary)
    try:
        if not outcome.is_error:
            check_depth(outcome.output, "The tool's output", at=IN_PART)
    except TooDeep as exc:  # the model and the transcript both get the error instead
        outcome = ToolResult.failed(c.id, c.name, str(exc))
    try:  # before the output chunk, as the original orders them
        await hooks.after_tool_call(ToolCallResultContext(
            call=call, step_number=step_number, duration=time.perf_counter() - started,
            success=not outcome.is_error, output=outcome.output, error=outcome.error,
            request_id=base_ctx.request_id, trigger=base_ctx.trigger, signal=base_ctx.signal))
    except Exception:
        log.exception("after_tool_call raised; the tool result stands")
    if outcome.is_error:
        await send({"type": "tool-output-error", "toolCallId": c.id, "errorText": outcome.error})
    else:
        chunk: JSONObject = {"type": "tool-output-available", "toolCallId": c.id, "output": outcome.output}
        if isinstance(outcome.output, dict) and outcome.output.get("status") == "paused" \
                and isinstance(outcome.output.get("descriptor"), dict):
            chunk["approvalDescriptor"] = outcome.output["descriptor"]  # a parked call: what to ask about
        await send(chunk)
    return outcome
