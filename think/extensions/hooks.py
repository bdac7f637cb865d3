"""Extension hooks in a turn: after the agent's own hook, in load order, with JSON-safe snapshots.

`ExtensionHooks` wraps the agent's loop hooks: each hook runs the agent's method first (its
result is the one the loop uses), then the extensions' hook of that name with a snapshot of plain
JSON. Only `before_turn` results are used: `merge_turn_config` takes the scalar settings an
extension may change (not the model, the system prompt, messages or tools) over the agent's.
A hook that fails, times out (`hook_timeout`) or returns something else is logged and ignored.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from think.hooks import (
    LoopHooks,
    StepConfig,
    StepContext,
    StepRecord,
    ToolCallContext,
    ToolCallResultContext,
    ToolDecision,
    TurnConfig,
    TurnContext,
)
from think.messages import JSONObject
from think.sandbox.values import cap_value, to_json

if TYPE_CHECKING:
    from think.extensions.manager import ExtensionManager

log = logging.getLogger("think.extensions")
SNAPSHOT_CHARS = 16_000
"""Largest tool input or output (as JSON) a snapshot carries; longer ones become a preview."""
_TURN_FIELDS: dict[str, tuple[type, ...]] = {
    "max_steps": (int,), "send_reasoning": (bool,), "max_output_tokens": (int,), "temperature": (int, float),
    "top_p": (int, float), "top_k": (int,), "presence_penalty": (int, float), "frequency_penalty": (int, float),
    "seed": (int,), "tool_choice": (str,)}
"""The `TurnConfig` fields an extension's `before_turn` may set."""


def merge_turn_config(config: TurnConfig | None, name: str, value: Any) -> TurnConfig | None:
    """`config` with the fields of one extension's `before_turn` result laid over it."""
    if value is None:
        return config
    if not isinstance(value, dict):
        log.warning("extension %s: before_turn returned %s, not a dict of settings; ignored", name,
                    type(value).__name__)
        return config
    fields: dict[str, Any] = {}
    for key, item in value.items():
        types = _TURN_FIELDS.get(key)
        if types is None or not isinstance(item, types) or (bool in types) != isinstance(item, bool):
            log.warning("extension %s: before_turn setting %r is not one it may set (or has the wrong type); "
                        "ignored", name, key)
            continue
        if key == "tool_choice" and item not in ("auto", "none", "required"):
            continue
        if key in ("max_steps", "max_output_tokens", "top_k") and not (isinstance(item, int) and item >= 1):
            continue
        fields[key] = item
    if not fields:
        return config
    return dataclasses.replace(config or TurnConfig(), **fields)


def turn_snapshot(ctx: TurnContext) -> JSONObject:
    return {"system": ctx.system, "tool_names": sorted(ctx.tools), "message_count": len(ctx.messages),
            "continuation": ctx.continuation, "body": to_json(ctx.body), "model_id": ctx.model.model_id}


def _call_fields(ctx: ToolCallContext | ToolCallResultContext) -> JSONObject:
    return {"tool_name": ctx.call.name, "tool_call_id": ctx.call.id, "input": cap_value(ctx.call.input, SNAPSHOT_CHARS),
            "step_number": ctx.step_number}


def chunk_snapshot(chunk: JSONObject) -> JSONObject:
    out: JSONObject = {"type": chunk.get("type")}
    for source, target in (("delta", "text"), ("toolName", "tool_name"), ("toolCallId", "tool_call_id")):
        if isinstance(chunk.get(source), str):
            out[target] = chunk[source]
    return out


class ExtensionHooks:
    """The agent's loop hooks followed by the extensions' (see the module docs)."""

    def __init__(self, hooks: LoopHooks, manager: ExtensionManager | None) -> None:
        self.hooks = hooks
        self.manager = manager

    def _hooked(self, hook: str) -> bool:
        return self.manager is not None and bool(self.manager.with_hook(hook))

    async def _run(self, hook: str, snapshot: JSONObject) -> list[tuple[str, Any]]:
        assert self.manager is not None
        return await self.manager.run_hook(hook, snapshot)

    async def before_step(self, ctx: StepContext) -> StepConfig | None:
        return await self.hooks.before_step(ctx)  # not an extension hook (as in the original)

    async def before_tool_call(self, ctx: ToolCallContext) -> ToolDecision | None:
        decision = await self.hooks.before_tool_call(ctx)
        if self._hooked("before_tool_call"):
            await self._run("before_tool_call", _call_fields(ctx))
        return decision

    async def after_tool_call(self, ctx: ToolCallResultContext) -> None:
        await self.hooks.after_tool_call(ctx)
        if self._hooked("after_tool_call"):
            snapshot = {**_call_fields(ctx), "duration": round(ctx.duration, 6),
                        "duration_ms": round(ctx.duration * 1000, 3), "success": ctx.success}  # ms: deprecated
            if ctx.success:
                snapshot["output"] = cap_value(ctx.output, SNAPSHOT_CHARS)
            else:
                snapshot["error"] = ctx.error
            await self._run("after_tool_call", snapshot)

    async def on_step_finish(self, step: StepRecord) -> None:
        await self.hooks.on_step_finish(step)
        if self._hooked("on_step_finish"):
            usage = to_json(dataclasses.asdict(step.usage)) if dataclasses.is_dataclass(step.usage) else None
            await self._run("on_step_finish", {
                "step_number": step.step_number, "finish_reason": step.finish_reason, "text": step.text,
                "reasoning_text": step.reasoning, "tool_call_count": len(step.tool_calls),
                "tool_result_count": len(step.tool_results), "usage": usage, "model_id": step.model})

    async def on_chunk(self, chunk: JSONObject) -> None:
        await self.hooks.on_chunk(chunk)
        await self.after_chunk(chunk)

    async def after_chunk(self, chunk: JSONObject) -> None:
        """The extensions' `on_chunk` only (the turn calls the agent's own itself)."""
        if self._hooked("on_chunk"):
            await self._run("on_chunk", chunk_snapshot(chunk))

    async def before_turn(self, ctx: TurnContext, config: TurnConfig | None) -> TurnConfig | None:
        """The extensions' `before_turn`, after the agent's (whose result is `config`)."""
        if not self._hooked("before_turn"):
            return config
        for name, value in await self._run("before_turn", turn_snapshot(ctx)):
            config = merge_turn_config(config, name, value)
        return config


__all__ = ["ExtensionHooks", "chunk_snapshot", "merge_turn_config", "turn_snapshot"]
