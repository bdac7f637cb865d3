"""An `Action` as the `Tool` the model calls: the tool's `execute` and its approval question go to
the agent's `ActionRuntime`, so every call — new, approved, recovered — meets the same checks.

The tool is `recovery="rerun"`: a call a crash cut off runs again at the restart, where the ledger
answers it (a settled key replays its result; a key still pending is not run blindly again).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from think.actions.action import Action
from think.messages import JSONObject
from think.tools.tool import Tool, ToolContext

if TYPE_CHECKING:
    from think.actions.runtime import ActionRuntime


def _runtime(ctx: ToolContext | None, fallback: Any) -> ActionRuntime:
    agent = ctx.agent if ctx is not None and ctx.agent is not None else fallback
    runtime: ActionRuntime = agent.action_runtime
    return runtime


def compile_action(act: Action, agent: Any) -> Tool:
    """The tool for `act` in `agent` (see the module docs)."""

    async def execute(arguments: JSONObject, ctx: ToolContext) -> Any:
        return await _runtime(ctx, agent).call(act, arguments, ctx)

    async def ask(arguments: JSONObject, ctx: ToolContext | None) -> Any:
        return await _runtime(ctx, agent).approval_request(act, arguments, ctx)

    return Tool(name=act.name, description=act.description, input_schema=act.input_schema, execute=execute,
                needs_approval=ask if act.kind == "approval-gated" else False, validate_input=act.validate_input,
                recovery="rerun")


def compile_actions(actions: dict[str, Action], agent: Any) -> dict[str, Tool]:
    return {name: compile_action(act, agent) for name, act in actions.items()}
