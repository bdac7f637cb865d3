"""The loop's UI message chunks against the npm `ai` package (the version pinned in package.json).

Each scenario runs the real `run_loop` with a `ScriptedModel` and real tools, records every chunk
it emits and folds them with our server-side `Fold`. One `node ui_chunks.mjs` run per session then
checks every recorded stream against `ai`: each chunk must validate against `uiMessageChunkSchema`
(and carry no key the `UIMessageChunk` type does not declare), and the client fold
(`readUIMessageStream`) must end with the same message as ours, after `normalize` removes the
known, intended differences between the two folds.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from think.loop import LoopResult, LoopStatus, run_loop
from think.messages import JSONObject, Message
from think.models.base import ModelRequest, TextContent, ToolSpec, UserMessage
from think.stream.fold import Fold
from think.testing.models import ScriptedModel, call, error, reasoning, text
from think.tools.tool import Tool, client_tool, tool

# ---- tools ---------------------------------------------------------------------------------------


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool
async def weather(city: str) -> dict[str, Any]:
    """Current weather in a city."""
    await anyio.sleep(0)
    return {"city": city, "celsius": 21 if city == "Lisbon" else 4}


@tool
def explode(reason: str) -> str:
    """A tool that always fails."""
    raise RuntimeError(reason)


@tool
async def countdown(n: int) -> AsyncIterator[Any]:
    """Count down, streaming each number as a preliminary output."""
    for i in range(n, 0, -1):
        yield {"remaining": i}
    yield {"remaining": 0, "status": "liftoff"}


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (asks a person first)."""
    return f"deleted {path}"


get_location = client_tool("get_location", description="The browser's location")

TOOLS: dict[str, Tool] = {t.name: t for t in (add, weather, explode, countdown, delete_file, get_location)}


# ---- scenarios -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    name: str
    script: Sequence[Any]
    status: LoopStatus
    max_steps: int = 10


SCENARIOS = [
    Scenario("plain-text", ["Hello there, how can I help you today?"], "completed"),
    Scenario("reasoning-with-signature",
             [[reasoning("The user greets me. I should greet back.", signature="sig-Qm9vbQ=="),
               text("Hi! Nice to meet you.")]], "completed"),
    Scenario("multi-step-server-tool",
             [[reasoning("I need to add."), text("Let me add those."), call("add", a=2, b=3)],
              "2 + 3 = 5."], "completed"),
    Scenario("parallel-tool-calls",
             [[call("weather", city="Lisbon"), call("weather", city="Oslo")],
              "Lisbon is warmer than Oslo."], "completed"),
    Scenario("tool-raises", [[call("explode", reason="kaboom")], "Sorry, that failed."], "completed"),
    Scenario("preliminary-outputs", [[call("countdown", n=3)], "We have liftoff."], "completed"),
    Scenario("unknown-tool", [[call("teleport", to="Mars")], "I cannot teleport."], "completed"),
    Scenario("unknown-tool-malformed-json", [[call("teleport", raw='{"to": "Mars"')], "No."], "completed"),
    Scenario("known-tool-malformed-json", [[call("add", raw='{"a": 2, "b":')], "Oops."], "completed"),
    Scenario("known-tool-invalid-input", [[call("add", a="two", b=3)], "Oops."], "completed"),
    Scenario("needs-approval", [[text("I will delete it."), call("delete_file", path="/tmp/x")]],
             "awaiting-approval"),
    Scenario("client-tool", [[call("get_location")]], "awaiting-client"),
    Scenario("max-steps", [[call("add", a=1, b=1)], [call("add", a=2, b=2)], "never reached"],
             "max-steps", max_steps=2),
    Scenario("model-error-mid-stream", [[text("Here is a partial ans"), error("upstream overloaded", status=529)]],
             "error"),
    Scenario("model-error-after-tool-step",
             [[call("add", a=1, b=2)], [text("The sum"), error("connection reset")]], "error"),
]

# Every chunk type `run_loop` emits. `test_scenarios_cover_every_chunk_type_the_loop_emits` keeps
# this honest against think/loop.py.
LOOP_CHUNK_TYPES = {
    "start", "start-step", "text-start", "text-delta", "text-end", "reasoning-start", "reasoning-delta",
    "reasoning-end", "tool-input-start", "tool-input-delta", "tool-input-available", "tool-input-error",
    "tool-approval-request", "tool-output-available", "tool-output-error", "finish-step", "finish", "error",
}


@dataclass
class Recorded:
    chunks: list[JSONObject]
    result: LoopResult
    fold: Fold


async def _record(scenario: Scenario) -> Recorded:
    chunks: list[JSONObject] = []
    fold = Fold(Message(id="placeholder", role="assistant"))

    async def emit(chunk: JSONObject) -> None:
        chunks.append(chunk)
        fold.apply(chunk)

    specs = tuple(ToolSpec(t.name, t.description, t.input_schema) for t in TOOLS.values())
    request = ModelRequest(system="You are a test.", messages=(UserMessage((TextContent("Hi"),)),), tools=specs)
    result = await run_loop(ScriptedModel(scenario.script), request, TOOLS, emit=emit,
                            max_steps=scenario.max_steps, message_id=f"msg-{scenario.name}")
    return Recorded(chunks, result, fold)


@pytest.fixture(scope="module")
def recorded() -> dict[str, Recorded]:
    async def record_all() -> dict[str, Recorded]:
        return {s.name: await _record(s) for s in SCENARIOS}

    return anyio.run(record_all)


@pytest.fixture(scope="module")
def npm_results(recorded: Mapping[str, Recorded],
                run_ui_chunks: Callable[[list[dict[str, Any]]], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    output = run_ui_chunks([{"name": name, "chunks": r.chunks} for name, r in recorded.items()])
    return {r["name"]: r for r in output["results"]}


# ---- normalization -------------------------------------------------------------------------------


def normalize(message: JSONObject, *, side: str) -> JSONObject:
    """Remove the known, intended differences between the server fold and the client fold."""
    out = {**message, "parts": [dict(p) for p in message["parts"]]}
    for part in out["parts"]:
        if side == "server" and part["type"].startswith("tool-"):
            # The server fold also stores `toolName` on static tool parts, as Think does
            # (reference §3.1 "Think additions"); the client derives it from `type`.
            part.pop("toolName", None)
    return out


# ---- tests ---------------------------------------------------------------------------------------

NAMES = [s.name for s in SCENARIOS]


@pytest.mark.parametrize("name", NAMES)
def test_loop_ends_as_scripted(name: str, recorded: Mapping[str, Recorded]) -> None:
    scenario = next(s for s in SCENARIOS if s.name == name)
    assert recorded[name].result.status == scenario.status


@pytest.mark.parametrize("name", NAMES)
def test_every_chunk_validates_against_the_npm_schema(name: str, npm_results: Mapping[str, Any]) -> None:
    result = npm_results[name]
    assert result["invalid"] == []
    assert result["unknownKeys"] == []


@pytest.mark.parametrize("name", NAMES)
def test_npm_client_fold_matches_our_fold(name: str, recorded: Mapping[str, Recorded],
                                          npm_results: Mapping[str, Any]) -> None:
    ours, theirs = recorded[name].fold, npm_results[name]
    assert theirs["error"] is None, "the client fold rejected the stream"
    assert theirs["message"] is not None
    assert normalize(theirs["message"], side="client") == normalize(ours.message.to_json(), side="server")
    assert theirs["streamErrors"] == ours.errors
    assert ours.cross_message == []


def test_scenarios_cover_every_chunk_type_the_loop_emits(recorded: Mapping[str, Recorded]) -> None:
    source = (Path(__file__).parents[2] / "think" / "loop.py").read_text()
    literal_types = set(re.findall(r'"type": "([a-z-]+)"', source))
    assert literal_types <= LOOP_CHUNK_TYPES, "the loop emits a chunk type this test does not know"
    seen = {chunk["type"] for r in recorded.values() for chunk in r.chunks}
    assert seen == LOOP_CHUNK_TYPES
