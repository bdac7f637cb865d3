"""The web UI and an agent, served by a subprocess the restart test SIGKILLs
(`python -m uvicorn tests.ui.restart_app:app`, data in `THINK_DATA_DIR`).

`UiRecovering` answers `slow N` with `w01 … wN` (a recovery continues from the last word said)
and `long` with a call of its server tool `long_task`, which takes a minute.
"""

from __future__ import annotations

import os
from typing import Any

import anyio

from tests.ui.protocol_agents import slow
from think import Think, tool
from think.models.base import ModelRequest, ToolMessage
from think.server import create_app
from think.testing.models import Reply, ScriptedModel, call


@tool
async def long_task(seconds: float) -> str:
    """A long job the server runs itself."""
    await anyio.sleep(seconds)
    return "finished"


def script(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        result = last.results[0]
        return "The long task was interrupted." if result.is_error else f"Long task: {result.output}"
    said = request.last_user_text
    if said.startswith("slow"):
        return slow(int(said.split()[1]), request.continuing)
    if said.startswith("long"):
        return call("long_task", seconds=60)
    return f"Echo: {said}"


class UiRecovering(Think):
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script)

    def get_tools(self) -> list[Any]:
        return [long_task]


app = create_app([UiRecovering], data_dir=os.environ["THINK_DATA_DIR"], ui=True, idle_timeout=60)
