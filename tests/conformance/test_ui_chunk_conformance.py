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
import anyio.lowlevel
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
    await anyio.lowlevel.checkpoint()
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


def _after_client_output(recorded: Mapping[str, Recorded]) -> Message:
    """The `client-tool` message once the browser has supplied the tool's output."""
    message = recorded["client-tool"].fold.message.copy_deep()
    (part,) = message.tool_parts
    part.state, part.output = "output-available", {"city": "Lisbon"}
    return message


@dataclass(frozen=True)
class Scenario:
    name: str
    script: Sequence[Any]
    status: LoopStatus
    max_steps: int = 10
    message_id: bool = True
    """Whether `run_loop` gets a message id (it goes into the `start` chunk)."""
    continues: Callable[[Mapping[str, Recorded]], Message] | None = None
    """The assistant message this turn continues (both folds start from it), built from earlier scenarios."""


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
    Scenario("model-error-mid-stream",
             [[text("Here is a partial ans"), error("upstream overloaded", status=529)]], "error"),
    Scenario("model-error-after-tool-step",
             [[call("add", a=1, b=2)], [text("The sum"), error("connection reset")]], "error"),
    Scenario("no-message-id", ["Hello without an id."], "completed", message_id=False),
    Scenario("continuation-after-client-output", ["You are in Lisbon."], "completed", message_id=False,
             continues=_after_client_output),
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
    start: Message | None


async def _record(scenario: Scenario, earlier: Mapping[str, Recorded]) -> Recorded:
    chunks: list[JSONObject] = []
    start = scenario.continues(earlier) if scenario.continues else None
    fold = Fold(start.copy_deep() if start else Message(id="server-id", role="assistant"),
                continuation=start is not None)

    async def emit(chunk: JSONObject) -> None:
        chunks.append(chunk)
        fold.apply(chunk)

    specs = tuple(ToolSpec(t.name, t.description, t.input_schema) for t in TOOLS.values())
    request = ModelRequest(system="You are a test.", messages=(UserMessage((TextContent("Hi"),)),),
                           tools=specs)
    result = await run_loop(ScriptedModel(scenario.script), request, TOOLS, emit=emit,
                            max_steps=scenario.max_steps,
                            message_id=f"msg-{scenario.name}" if scenario.message_id else None)
    return Recorded(chunks, result, fold, start)


@pytest.fixture(scope="module")
def recorded() -> dict[str, Recorded]:
    async def record_all() -> dict[str, Recorded]:
        done: dict[str, Recorded] = {}
        for scenario in SCENARIOS:
            done[scenario.name] = await _record(scenario, done)
        return done

    return anyio.run(record_all)


@pytest.fixture(scope="module")
def npm_results(recorded: Mapping[str, Recorded],
                run_ui_chunks: Callable[[list[dict[str, Any]]], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    streams = []
    for name, r in recorded.items():
        stream: dict[str, Any] = {"name": name, "chunks": r.chunks}
        if r.start is not None:
            # What the client holds: its own fold of the earlier turn, which the earlier scenario's
            # test checks equals ours after normalization.
            stream["message"] = normalize(r.start.to_json(), side="server")
        streams.append(stream)
    output = run_ui_chunks(streams)
    return {r["name"]: r for r in output["results"]}


# ---- normalization -------------------------------------------------------------------------------


def normalize(message: JSONObject, *, side: str) -> JSONObject:
    """Remove the known, intended differences between the server fold and the client fold.

    Each removal is one documented difference (think-reference.md §3); anything else is compared.
    """
    out = {**message, "parts": [dict(p) for p in message["parts"]]}
    for part in out["parts"]:
        if side == "server" and part["type"].startswith("tool-"):
            # The server fold also stores `toolName` on static tool parts, as Think does (§3.1
            # "Think additions"); the client derives the name from `type`.
            part.pop("toolName", None)
        if side == "client" and part["type"] == "reasoning":
            # The server fold ignores text/reasoning chunk ids and appends to the last part of the
            # kind (§3.3); ai 7 keeps the `reasoning-start` id on the reasoning part.
            part.pop("id", None)
    return out


def _same_id_rules(message: JSONObject, rec: Recorded) -> JSONObject:
    if "messageId" in rec.chunks[0] or rec.start is not None:
        return message
    # A fresh message whose `start` chunk has no `messageId` gets its id from each side: the
    # client makes one up (`readUIMessageStream` uses ""; useChat generates one), the server keeps
    # the id its host gave the message (§3.3).
    return {k: v for k, v in message.items() if k != "id"}


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
    rec, theirs = recorded[name], npm_results[name]
    assert theirs["error"] is None, "the client fold rejected the stream"
    assert theirs["message"] is not None
    client = _same_id_rules(normalize(theirs["message"], side="client"), rec)
    server = _same_id_rules(normalize(rec.fold.message.to_json(), side="server"), rec)
    _check_tool_input_errors(server, client)
    assert client == server
    assert theirs["streamErrors"] == rec.fold.errors
    assert rec.fold.cross_message == []


def _check_tool_input_errors(server: JSONObject, client: JSONObject) -> None:
    """A targeted check, with a readable message, for a divergence that is a bug in our Fold.

    For a static tool's `tool-input-error`, ai 7.0.173's client fold stores the chunk's `input` in
    the part's `input` (as for dynamic tools; `rawInput` on output-error parts is deprecated), while
    our Fold stores it in `rawInput` and leaves `input` unset (what earlier ai 7 releases did).
    """
    theirs = {p["toolCallId"]: p for p in client["parts"] if "toolCallId" in p}
    for part in server["parts"]:
        other = theirs.get(part.get("toolCallId"))
        if part.get("state") != "output-error" or other is None or other.get("state") != "output-error":
            continue
        assert (part.get("input"), part.get("rawInput")) == (other.get("input"), other.get("rawInput")), (
            f"{part['type']} {part['toolCallId']} (output-error): our Fold has input={part.get('input')!r}, "
            f"rawInput={part.get('rawInput')!r}; ai's client fold has input={other.get('input')!r}, "
            f"rawInput={other.get('rawInput')!r}. See think/stream/fold.py, case \"tool-input-error\"."
        )


def test_scenarios_cover_every_chunk_type_the_loop_emits(recorded: Mapping[str, Recorded]) -> None:
    source = (Path(__file__).parents[2] / "think" / "loop.py").read_text()
    literal_types = set(re.findall(r'"type": "([a-z-]+)"', source))
    assert literal_types <= LOOP_CHUNK_TYPES, "the loop emits a chunk type this test does not know"
    seen = {chunk["type"] for r in recorded.values() for chunk in r.chunks}
    assert seen == LOOP_CHUNK_TYPES
