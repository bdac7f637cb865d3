"""Calling fetch tools the way the loop does: validate the model's arguments, then execute."""

from __future__ import annotations

import inspect
from typing import Any

from think.tools.tool import Tool, ToolContext


async def call(tools: dict[str, Tool], name: str, agent: Any = None, **arguments: Any) -> dict[str, Any]:
    found = tools[name]
    assert found.execute is not None
    result = found.execute(found.check_input(arguments), ToolContext(tool_call_id="c1", tool_name=name, agent=agent))
    if inspect.isawaitable(result):
        result = await result
    assert isinstance(result, dict)
    return result
