"""An agent for the deep-nesting tests, and builders of nested JSON (as values and as text).

`nested(n)` / `nested_text(n)` nest objects and arrays alternately, `n` levels deep as
`think.protocol.limits` counts them (`{"k": [ … "leaf" … ]}`); the text form reaches depths no
JSON encoder would produce, which is what a hostile client sends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from think import Think, callable, tool
from think.models.base import ModelRequest, ToolMessage
from think.models.events import Finish, ReasoningDelta, StreamEvent, TextDelta
from think.testing.models import Reply, ScriptedModel, call
from think.tools.tool import ToolContext, client_tool

LEAF = "leaf"


def nested(depth: int) -> Any:
    """A value `depth` levels deep: objects and arrays alternately around a string."""
    value: Any = LEAF
    for level in range(depth, 0, -1):
        value = {"k": value} if level % 2 else [value]
    return value


def nested_text(depth: int) -> str:
    """`nested(depth)` as JSON text, built without an encoder (any depth)."""
    opening = "".join('{"k":' if level % 2 else "[" for level in range(1, depth + 1))
    closing = "".join("}" if level % 2 else "]" for level in range(depth, 0, -1))
    return f'{opening}"{LEAF}"{closing}'


def depth_of_nested(value: Any) -> int:
    """How deep a `nested(...)` value is (its levels counted one by one)."""
    depth = 0
    while isinstance(value, dict | list):
        value = value["k"] if isinstance(value, dict) else value[0]
        depth += 1
    return depth if value == LEAF else -1


@tool
def deep_output(depth: int) -> Any:
    """Return a value nested `depth` levels deep.

    Args:
        depth: How deep.
    """
    return nested(depth)


@tool
async def deep_data(ctx: ToolContext, depth: int) -> str:
    """Write a data part nested `depth` levels deep.

    Args:
        depth: How deep.
    """
    await ctx.agent.write_data("deep", nested(depth))
    return "written"


@tool
def take(v: Any = None) -> str:
    """Take any input."""
    return "taken"


def script(request: ModelRequest) -> Reply:
    """`locate` → a client tool call; `deep output N` / `deep data N` → a server tool whose
    output / data part is N deep; `deep input N` → a call of `take` whose input is N deep (sent as
    raw text); after tool results `Done.`; anything else `Echo: …`."""
    if isinstance(request.messages[-1], ToolMessage):
        return "Done."
    words = request.last_user_text.split()
    match words:
        case ["locate", *_]:
            return call("get_location", id="loc1")
        case ["deep", "output", depth]:
            return call("deep_output", id="out1", depth=int(depth))
        case ["deep", "data", depth]:
            return call("deep_data", id="data1", depth=int(depth))
        case ["deep", "input", depth]:
            return call("take", id="in1", raw=f'{{"v":{nested_text(int(depth) - 1)}}}')
    return f"Echo: {request.last_user_text}"


class DeepMetadataModel:
    """Reasons with provider metadata `depth` levels deep (what a model stream itself carries)."""

    model_id = "deep-metadata"

    def __init__(self, depth: int) -> None:
        self.depth = depth

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        yield ReasoningDelta("Thinking.", provider_metadata={"vendor": nested(self.depth)})
        yield TextDelta("Answered.")
        yield Finish("stop")


class DeepChat(Think):
    """Served at `/agents/deep-chat/<name>`; see `script` for its answers."""

    workspace_bash = False

    def get_model(self) -> ScriptedModel | DeepMetadataModel:
        said = self.session.history()[-1].text.split() if self.session.history() else []
        if said[:2] == ["deep", "reasoning"]:  # `deep reasoning N`
            return DeepMetadataModel(int(said[2]))
        return ScriptedModel(script)

    def get_tools(self) -> list[Any]:
        return [client_tool("get_location"), deep_output, deep_data, take]

    def get_skill_script_runner(self) -> None:
        return None

    @callable
    async def set_nested(self, depth: int) -> str:
        """Server code setting a state `depth` levels deep."""
        await self.set_state(nested(depth))
        return "set"

    @callable
    async def keep(self, value: Any) -> str:
        """Set the state to `value`, as the client sent it."""
        await self.set_state(value)
        return "kept"

    @callable
    def nested_result(self, depth: int) -> Any:
        return nested(depth)

    @callable
    def ping(self) -> str:
        return "pong"
