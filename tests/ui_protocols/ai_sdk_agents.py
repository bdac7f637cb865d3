"""The agent the AI SDK scenarios talk to: `NodeChat` (tests/node/agents.py), plus

* a continuation that waits: `where, gated` calls the client tool `get_city`, and the
  continuation after its answer streams `w01 w02 w03 `, waits for the `open_gate` RPC, then
  `w04 w05`;
* a batch: `two cities` calls `get_city` twice in one step (`call_a`, `call_b`), and once both
  are answered says `Both: <a> and <b>.`;
* `remove P` calls `danger` (needs approval), then says `Removed <P>.`, or, denied,
  `Kept it: <the denial>.`"""

from __future__ import annotations

from tests.gated import GatedModel
from tests.node.agents import CHUNK_DELAY, NodeChat
from think.messages import ToolPart
from think.models.base import ModelRequest, ToolMessage
from think.testing import ScriptedModel, call
from think.testing.models import Reply


def batch_script(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        a, b = (result.output["city"] for result in last.results)
        return f"Both: {a} and {b}."
    return [call("get_city", id="call_a"), call("get_city", id="call_b")]


def remove_script(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        (result,) = last.results
        return f"Kept it: {result.output}." if result.is_error else f"Removed {result.output['deleted']}."
    return call("danger", id="call_remove", path=request.last_user_text.removeprefix("remove").strip())


class AiSdkChat(NodeChat):
    """Served at `/agents/ai-sdk-chat/<name>`."""

    def get_model(self) -> ScriptedModel | GatedModel:
        history = self.session.history()
        users = [m for m in history if m.role == "user"]
        last = history[-1] if history else None
        answered = last is not None and last.role == "assistant" and any(
            isinstance(p, ToolPart) and p.tool_call_id == "call_where" and p.state == "output-available"
            for p in last.parts)
        if answered and users and "gated" in users[-1].text:
            return GatedModel(self.gate)
        if users and users[-1].text.startswith("two cities"):
            return ScriptedModel(batch_script, chunk_delay=CHUNK_DELAY)
        if users and users[-1].text.startswith("remove"):
            return ScriptedModel(remove_script, chunk_delay=CHUNK_DELAY)
        return super().get_model()
