"""Running one tool call: failures become error results the model sees, never crashes."""

from __future__ import annotations

import contextvars
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from think.errors import ToolFailed
from think.messages import JSONObject
from think.tools.tool import Tool, ToolContext, jsonable_output

log = logging.getLogger("think.tools")
_CALL: contextvars.ContextVar[str | None] = contextvars.ContextVar("think_tool_call", default=None)


def current_tool_call() -> str | None:
    """The id of the tool call whose `execute` the current task is running, if any (progress a
    tool reports is tagged with it, so a client shows it on that call)."""
    return _CALL.get()

OnPreliminary = Callable[[Any], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call: an output, or an error text for the model."""

    call_id: str
    name: str
    output: Any = None
    error: str | None = None

    @property
    def is_error(self) -> bool:
        return self.error is not None

    @classmethod
    def ok(cls, call_id: str, name: str, output: Any) -> ToolResult:
        return cls(call_id, name, output=output)

    @classmethod
    def failed(cls, call_id: str, name: str, error: str) -> ToolResult:
        return cls(call_id, name, error=error)


async def run_tool(tool: Tool, arguments: JSONObject, ctx: ToolContext,
                   *, on_preliminary: OnPreliminary | None = None) -> ToolResult:
    """Run `tool.execute`; an async generator's values before the last are preliminary outputs."""
    assert tool.execute is not None, "client tools are not run on the server"
    token = _CALL.set(ctx.tool_call_id or None)
    try:
        result = tool.execute(arguments, ctx)
        if inspect.isasyncgen(result):
            last: Any = None
            seen = False
            async for value in result:
                if seen and on_preliminary is not None:
                    await on_preliminary(jsonable_output(last))
                last, seen = value, True
            output = last
        elif inspect.isawaitable(result):
            output = await result
        else:
            output = result
    except ToolFailed as exc:  # written by the tool's author, for the model
        return ToolResult.failed(ctx.tool_call_id, tool.name, str(exc) or type(exc).__name__)
    except Exception as exc:  # a bug in the tool: tell the model, log the traceback
        log.exception("tool %s crashed", tool.name)
        return ToolResult.failed(ctx.tool_call_id, tool.name, f"{type(exc).__name__}: {exc}")
    finally:
        _CALL.reset(token)
    return ToolResult.ok(ctx.tool_call_id, tool.name, jsonable_output(output))
