"""The agent `think chat` talks to in the CLI tests: a `Think` with a scripted model and tools.

What the model answers depends on the last user message:

* `hello …`  → reasoning, then `Hello! You said: …`;
* `slow …`   → `w01 w02 w03 ` then waits until the turn is cancelled;
* `boom …`   → `About to fail. ` then the model fails with `mock model exploded`;
* `add A B`  → calls the server tool `add`, then answers `The sum is <result>.`;
* `notify …` → calls `notify_team`, which needs a person's approval;
* `crunch …`  → calls `crunch`, which reports progress (a milestone, 40 %, 45 %, 100 %);
* `markdown …` → an answer in markdown (`MARKDOWN`: a heading, emphasis, a long list item, code);
* anything else → `Echo: <text>`.
"""

from __future__ import annotations

from typing import Any

from tests.shared_tools import add, notify_team
from think import Think, tool
from think.models.base import ModelRequest, ToolMessage
from think.testing import HANG, ScriptedModel, call, error, reasoning, text
from think.testing.models import Reply
from think.tools.tool import ToolContext

MARKDOWN = ("# Plan\n\nHere is **bold** text and `code`:\n\n- first item\n"
            "- a second item that is long enough to need wrapping at forty columns\n\n"
            "```python\nprint('hi')\n\nprint('after a blank line')\n```\n\nDone.")


def script(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        result = last.results[0]
        return f"The sum is {result.output}." if result.name == "add" else f"Done: {result.output}"
    said = request.last_user_text
    if said.startswith("hello"):
        return [reasoning("The user greets me."), text(f"Hello! You said: {said}")]
    if said.startswith("slow"):
        return [text("w01 w02 w03 "), HANG]
    if said.startswith("boom"):
        return [text("About to fail. "), error("mock model exploded")]
    if said.startswith("add"):
        a, b = (int(word) for word in said.split()[1:3])
        return call("add", a=a, b=b)
    if said.startswith("crunch"):
        return call("crunch")
    if said.startswith("markdown"):
        return text(MARKDOWN)
    if said.startswith("notify"):
        return call("notify_team", message="The deploy finished")
    return f"Echo: {said}"


class CliChat(Think):
    """Served at `/agents/cli-chat/<name>`; see the module docstring for its answers."""

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script, chunk_delay=0.002, model_id="scripted-cli")

    def get_tools(self) -> list[Any]:
        return [add, notify_team, crunch]


@tool
async def crunch(ctx: ToolContext) -> str:
    """Crunch the numbers, saying how far it is."""
    agent = ctx.agent
    await agent.report_progress(milestone="loaded")
    await agent.report_progress(fraction=0.4, message="crunching")
    await agent.report_progress(fraction=0.45, message="crunching")  # too little news for a line
    await agent.report_progress(fraction=1.0, message="finished")
    return "crunched"
