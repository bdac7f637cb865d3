"""The agent the npm client scenarios talk to: a `Think` with a scripted model and a server tool.

What the model answers depends on the last user message:

* `hello …`  → reasoning, then `Hello! You said: …`, streamed a word at a time;
* `slow …`   → `w01 w02 w03 ` then waits until the turn is cancelled;
* `gated …`  → `w01 w02 w03 `, waits for the `open_gate` RPC, then `w04 w05`;
* `boom …`   → `About to fail. ` then the model fails with `mock model exploded`;
* `add A B`  → calls the server tool `add`, then answers `The sum is <result>.`;
* `delegate …` → hands the text to a `NodeHelper` child (an agent tool), then `The helper said: …`;
* `locate …` → calls `get_location`, a tool the page registers (`clientTools`), and waits for it;
* `where …`  → calls the client tool `get_city` (declared on the server), then `You are in <city>.`;
* `delete P` → calls `danger` (needs approval), then `Deleted <P>.`;
* anything else → `Echo: <text>`.

`NodeSteer` (for the steer test, `message_concurrency = "steer"`) answers `plan …` by calling
`wait_gate` (it waits for the `open_gate` RPC), then `Plan finished.`; anything else with
`Noted: <text> (after N tool results).`

`NodeRecovering` (for the restart test) answers `count N` with `w01 … wN`, continuing a cut
answer from its last word.
"""

from __future__ import annotations

from typing import Any

import anyio

from tests.gated import Gate, GatedModel
from tests.shared_tools import add
from think import Think, agent_tool, callable, tool
from think.models.base import ModelRequest, ToolMessage
from think.testing import HANG, ScriptedModel, call, error, reasoning, text
from think.testing.models import Reply, delay
from think.tools.tool import ToolContext, client_tool

CHUNK_DELAY = 0.002
"""Seconds between streamed events."""
SLOW_CHUNK_DELAY = 0.03
"""For `hello …`: slow enough that the client renders the answer several times as it grows
(`useAgentChat` throttles renders to one per 50 ms)."""


def script(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        result = last.results[0]
        match result.name:
            case "node_helper":
                return f"The helper said: {result.output}"
            case "get_location":
                return "Located."
            case "get_city":
                return f"You are in {result.output['city']}."
            case "danger":
                return f"Deleted {result.output['deleted']}."
        return f"The sum is {result.output}."
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
    if said.startswith("delegate"):
        return call("node_helper", prompt=said.removeprefix("delegate").strip())
    if said.startswith("locate"):
        return call("get_location", id="loc1")
    if said.startswith("where"):
        return call("get_city", id="call_where")
    if said.startswith("delete"):
        return call("danger", id="call_delete", path=said.removeprefix("delete").strip())
    return f"Echo: {said}"


@tool(needs_approval=True)
def danger(path: str) -> dict[str, str]:
    """Delete a file (asks first).

    Args:
        path: Which file.
    """
    return {"deleted": path}


@tool
async def work(ctx: ToolContext) -> str:
    """Do the helper's work, reporting progress and a milestone on the way."""
    await ctx.agent.report_progress(fraction=0.5, message="halfway", phase="digging")
    await ctx.agent.report_progress(milestone="found-it", message="found the charts")
    await ctx.agent.report_progress(fraction=1.0, message="done", phase="digging")
    return "worked"


def helper_script(request: ModelRequest) -> Reply:
    if isinstance(request.messages[-1], ToolMessage):
        return [text(f"Helper on {request.last_user_text}: done.", chunks=4)]
    return call("work")


class NodeHelper(Think):
    """The child `delegate …` runs: calls its `work` tool (which reports progress and a
    milestone), then answers `Helper on <prompt>: done.` a few characters at a time."""

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(helper_script, chunk_delay=CHUNK_DELAY)

    def get_tools(self) -> list[Any]:
        return [work]


class NodeChat(Gate, Think):
    """Served at `/agents/node-chat/<name>`; see the module docstring for its answers."""


    def get_model(self) -> ScriptedModel | GatedModel:
        history = self.session.history()
        said = history[-1].text if history and history[-1].role == "user" else ""
        if said.startswith("gated"):
            return GatedModel(self.gate)
        return ScriptedModel(script, chunk_delay=SLOW_CHUNK_DELAY if said.startswith("hello") else CHUNK_DELAY)

    def get_tools(self) -> list[Any]:
        return [add, agent_tool(NodeHelper, description="Hand a task to a helper agent.", display_name="Helper"),
                client_tool("get_city"), danger]

    @callable
    def open_gate(self) -> str:
        """Let gated turns finish (once opened, the gate of this instance stays open)."""
        self.gate().set()
        return "open"


COUNT_DELAY = 0.05
"""Seconds between two words of a `count N` answer."""


def count_script(request: ModelRequest) -> Reply:
    """`count N` → `w01 w02 … wN`, a word every `COUNT_DELAY` seconds; asked to continue a cut
    answer (`request.continuing`), only the words after the last one it said."""
    total = int(request.last_user_text.split()[1])
    said = (request.continuing or "").split()
    items: list[Any] = []
    for k in range(len(said) + 1, total + 1):
        items += [text(f"w{k:02d} "), delay(COUNT_DELAY)]
    return items


class NodeRecovering(Think):
    """Served by `restart_app.py` in a subprocess the restart test kills: `count N` answers."""

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(count_script)


def steer_script(request: ModelRequest) -> Reply:
    results = sum(len(m.results) for m in request.messages if isinstance(m, ToolMessage))
    if isinstance(request.messages[-1], ToolMessage):
        return "Plan finished."
    said = request.last_user_text
    if said.startswith("plan"):
        return call("wait_gate")
    return [text(f"Noted: {said} (after {results} tool results).", chunks=6)]


@tool
async def wait_gate(ctx: ToolContext) -> str:
    """Wait until the test opens the gate."""
    agent = ctx.agent
    assert isinstance(agent, NodeSteer)
    await agent.gate().wait()
    return "opened"


class NodeSteer(Gate, Think):
    """Served at `/agents/node-steer/<name>`: a message sent while a turn runs steers it."""

    message_concurrency = "steer"

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(steer_script, chunk_delay=CHUNK_DELAY)

    def get_tools(self) -> list[Any]:
        return [wait_gate]

    @callable
    def open_gate(self) -> str:
        self.gate().set()
        return "open"

    @callable
    async def wait_steered(self) -> bool:
        """Until a message waits for the running turn's step boundary (10 s at most)."""
        with anyio.fail_after(10):
            while not self.steering.pending():  # noqa: ASYNC110 - no event covers it
                await anyio.sleep(0.01)
        return True
