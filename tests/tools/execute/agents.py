"""Agents for the execute tests: a few server tools (one needs approval), a client tool, a counter."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from think import Think, tool
from think.testing.models import ScriptedModel
from think.tools.execute import create_execute_tool
from think.tools.tool import client_tool

SIDE_EFFECTS: list[str] = []


@tool
def get_weather(city: str, units: str = "C") -> dict[str, Any]:
    """The weather in a city.

    Args:
        city: The city's name.
        units: C or F.
    """
    SIDE_EFFECTS.append(f"weather:{city}")
    return {"city": city, "temp": len(city) * 3, "units": units}


@tool(needs_approval=True)
def send_email(to: str, body: str) -> str:
    """Send an email."""
    SIDE_EFFECTS.append(f"email:{to}")
    counter = os.environ.get("THINK_TEST_COUNTER")
    if counter:
        with Path(counter).open("a") as f:
            f.write(f"email:{to}\n")
    return f"sent to {to}"


ask_user = client_tool("ask_user", description="Ask the person.", input_schema={
    "type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]})


class Coder(Think):
    model: ClassVar[ScriptedModel] = ScriptedModel([])
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return type(self).model

    def get_tools(self) -> list[Any]:
        return [get_weather, send_email, ask_user, create_execute_tool(self, timeout=5)]
