"""Agents for the execute tests: a few server tools (one needs approval), a client tool, a counter."""

from __future__ import annotations

import os
import signal
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


def _count(line: str) -> None:
    """Append to the side-effect file the test reads (it survives the process)."""
    with Path(os.environ["THINK_TEST_COUNTER"]).open("a") as f:
        f.write(line + "\n")


@tool
def bump(n: int) -> int:
    """Count a side effect."""
    _count(f"bump:{n}")
    return n * 10


@tool
def die() -> str:
    """SIGKILL this process the first time (while the `armed` file exists), then just answer."""
    _count("die")
    armed = Path(os.environ["THINK_TEST_COUNTER"] + ".armed")
    if armed.exists():
        armed.unlink()
        os.kill(os.getpid(), signal.SIGKILL)
    return "alive"


class CrashCoder(Think):
    """The agent a child process runs and kills itself in; the test reopens it afterwards."""

    model: ClassVar[ScriptedModel] = ScriptedModel([])
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return type(self).model

    def get_tools(self) -> list[Any]:
        return [bump, die, send_email, create_execute_tool(self, timeout=10)]
