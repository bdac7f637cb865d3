"""Agent classes the agent tests share (importable from a subprocess too)."""

from __future__ import annotations

from think import Think, tool
from think.testing.models import ScriptedModel, call, reasoning


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Calculator(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel([[reasoning("Use the tool."), call("add", a=2, b=3, id="call_1")],
                              [call("add", a=5, b=5, id="call_2")], "2 + 3 = 5, and 5 + 5 = 10."])

    def get_tools(self) -> list:  # type: ignore[type-arg]
        return [add]
