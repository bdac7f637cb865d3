"""An agent a server subprocess serves for the steer kill test (`steer_app.py`).

`plan …` calls `long_task`, which blocks until the process dies (it logs `tool` to the file
named by `THINK_TEST_CALLS` first); the answer after the tool is `Plan finished.`; anything else
is `Noted: <text>`. Every model call logs `model: <last user text>`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio

from think import Think, callable, tool
from think.models.base import ModelRequest, ToolMessage
from think.testing.models import Reply, ScriptedModel, call


def _log(line: str) -> None:
    with Path(os.environ["THINK_TEST_CALLS"]).open("a") as out:
        out.write(line + "\n")


def script(request: ModelRequest) -> Reply:
    said = request.last_user_text
    _log(f"model: {said}")
    if isinstance(request.messages[-1], ToolMessage):
        return "Plan finished."
    if said.startswith("plan"):
        return call("long_task")
    return f"Noted: {said}"


@tool
async def long_task() -> str:
    """Work that takes until the process is killed."""
    _log("tool")
    await anyio.sleep_forever()
    return "never"


class SteerKill(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script)

    def get_tools(self) -> list[Any]:
        return [long_task]

    @callable
    async def submit(self, text: str, when_busy: str = "queue") -> dict[str, Any]:
        return (await self.submit_messages(text, when_busy=when_busy)).to_json()  # type: ignore[arg-type]

    @callable
    def is_steering(self) -> bool:
        return self.steering.pending()

    @callable
    def inspect(self, submission_id: str) -> dict[str, Any] | None:
        found = self.inspect_submission(submission_id)
        return found.to_json() if found is not None else None

    @callable
    def transcript(self) -> list[str]:
        return [f"{m.role}: {m.text}" for m in self.messages]
