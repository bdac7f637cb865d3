"""Deeply nested input never bricks an instance: it is refused where it enters, or served forever.

A fuzz over every depth from 240 to 270 and around the limit, in each place a client can put
nested data: the agent's state (`cf_agent_state`), a data part and the metadata of a message in a
chat request's transcript, and a client tool's output (`cf_agent_tool_result`). The frames are
written as raw text (no encoder could produce the deep ones). After each one the input is either
refused with an error naming the limit, with nothing stored, or served to every client afterwards:
a fresh `AgentClient` connects and reads it, `get-messages` returns it over HTTP, the client's next
chat request (which resends the whole transcript) is accepted; and all of it again after the server
restarts on the same data. The browser hooks read the same rooms in `tests/node`.

Values that server code produces (a tool's output, a model's tool input, a data part written by a
tool, `set_state` from an RPC call, an RPC result) are held to the same limit where they enter.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.chat.live_server import LiveServer, serve_in_thread
from tests.server.deep_agents import DeepChat, depth_of_nested, nested, nested_text
from think.client import AgentClient
from think.messages import DataPart, ToolPart
from think.protocol.limits import IN_PART, MAX_DEPTH
from think.runtime import EmbeddedRuntime
from think.server import create_app

AGENT = "deep-chat"


@dataclass(frozen=True)
class Kind:
    """A place for nested client data: how deep a value may be there, and how to send one."""

    name: str
    allowed: int
    """The deepest value accepted in this place."""


STATE = Kind("state", MAX_DEPTH)
METADATA = Kind("metadata", MAX_DEPTH - 1)
DATA_PART = Kind("data-part", MAX_DEPTH - IN_PART)
TOOL_OUTPUT = Kind("tool-output", MAX_DEPTH - IN_PART)
KINDS = (STATE, METADATA, DATA_PART, TOOL_OUTPUT)


def depths(kind: Kind) -> list[int]:
    near = {*range(kind.allowed - 2, kind.allowed + 3), *range(MAX_DEPTH - 2, MAX_DEPTH + 3)}
    return sorted(near | set(range(240, 271)))


CASES = [(kind, depth) for kind in KINDS for depth in depths(kind)]


def room(kind: Kind, depth: int) -> str:
    return f"{kind.name}-{depth}"


def serve(data: Path) -> Any:
    return serve_in_thread(create_app([DeepChat], runtime=EmbeddedRuntime(data, idle_timeout=60)))


def client(server: LiveServer, name: str, **options: Any) -> Any:
    return AgentClient.connect(server.agent_url(AGENT, name), turn_timeout=20, wait_timeout=10, **options)


def chat_request_text(request_id: str, messages_json: str) -> str:
    body = '{"messages":[' + messages_json + '],"trigger":"submit-message"}'
    return json.dumps({"type": "cf_agent_use_chat_request", "id": request_id,
                       "init": {"method": "POST", "body": body}})


def user_message_json(message_id: str, *, metadata: str | None = None, data: str | None = None) -> str:
    parts = '[{"type":"text","text":"deep"}' + (f',{{"type":"data-deep","data":{data}}}' if data else "") + "]"
    meta = f',"metadata":{metadata}' if metadata else ""
    return f'{{"id":"{message_id}","role":"user","parts":{parts}{meta}}}'


@dataclass
class Outcome:
    refused: bool
    error: str = ""


async def send_deep(kind: Kind, depth: int, attacker: AgentClient) -> Outcome:
    """Send one value `depth` deep to the room of `attacker`; whether the server refused it."""
    errors = len(attacker.errors)
    match kind:
        case Kind(name="state"):
            await attacker.send_text(f'{{"type":"cf_agent_state","state":{nested_text(depth)}}}')
        case Kind(name="tool-output"):
            await attacker.send_text(f'{{"type":"cf_agent_tool_result","toolCallId":"loc1",'
                                     f'"toolName":"get_location","output":{nested_text(depth)}}}')
        case _:
            value = nested_text(depth)
            message = user_message_json(f"user-{depth}", metadata=value if kind is METADATA else None,
                                        data=value if kind is DATA_PART else None)
            turn = attacker.turn(f"deep-{depth}")
            await attacker.send_text(chat_request_text(turn.request_id, message))
            await turn
            return Outcome(turn.outcome == "error", turn.error or "")
    assert await attacker.call("ping") == "pong"  # frames of one socket are handled in order
    return Outcome(len(attacker.errors) > errors, " ".join(attacker.errors[errors:]))


def stored_depth(kind: Kind, depth: int, fresh: AgentClient, messages: list[dict[str, Any]]) -> int | None:
    """The depth of the value this case stored, as a client reads it back (None: not stored)."""
    if kind is STATE:
        return None if fresh.state is None else depth_of_nested(fresh.state)
    if kind is TOOL_OUTPUT:
        parts = [p for m in messages for p in m["parts"] if p.get("toolCallId") == "loc1"]
        assert len(parts) == 1
        return depth_of_nested(parts[0]["output"]) if parts[0]["state"] == "output-available" else None
    found = [m for m in messages if m["id"] == f"user-{depth}"]
    if not found:
        return None
    if kind is METADATA:
        return depth_of_nested({k: v for k, v in found[0]["metadata"].items() if k != "channel"}["k"]) + 1
    (data,) = [p for p in found[0]["parts"] if p["type"] == "data-deep"]
    return depth_of_nested(data["data"])


async def check_served(server: LiveServer, kind: Kind, depth: int, *, accepted: bool, talk: bool) -> None:
    """A fresh client connects, reads the state and messages (socket and HTTP) and, with `talk`,
    sends a chat request (its transcript holds the value) that the server accepts."""
    async with client(server, room(kind, depth)) as fresh:
        over_socket = [m.to_json() for m in fresh.messages]
        over_http = [m.to_json() for m in await fresh.get_messages()]
        assert over_socket == over_http
        assert stored_depth(kind, depth, fresh, over_socket) == (depth if accepted else None)
        if talk:
            turn = await (await fresh.send_chat("after"))
            assert turn.outcome == "completed", turn.error
            assert turn.text == "Echo: after"


async def prepare(attacker: AgentClient, kind: Kind) -> None:
    if kind is TOOL_OUTPUT:  # a client tool call waits for its output
        turn = await (await attacker.send_chat("locate me"))
        assert turn.outcome == "completed"


async def run_cases(server: LiveServer, cases: list[tuple[Kind, int]], check: Callable[..., Awaitable[None]],
                    concurrency: int = 8) -> None:
    limiter = anyio.Semaphore(concurrency)

    async def one(kind: Kind, depth: int) -> None:
        async with limiter:
            await check(server, kind, depth)

    async with anyio.create_task_group() as tasks:
        for kind, depth in cases:
            tasks.start_soon(one, kind, depth)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


async def test_deep_client_input_is_refused_or_served_to_every_client_across_a_restart(data: Path) -> None:
    outcomes: dict[tuple[str, int], Outcome] = {}
    problems: list[str] = []

    async def attack(server: LiveServer, kind: Kind, depth: int) -> None:
        async with client(server, room(kind, depth)) as attacker:
            await prepare(attacker, kind)
            outcome = outcomes[kind.name, depth] = await send_deep(kind, depth, attacker)
        if outcome.refused != (depth > kind.allowed):
            problems.append(f"{kind.name} {depth}: {'refused' if outcome.refused else 'accepted'} ({outcome.error})")
        elif outcome.refused and f"limit of {MAX_DEPTH}" not in outcome.error \
                and f"limit is {MAX_DEPTH}" not in outcome.error:
            problems.append(f"{kind.name} {depth}: the error does not name the limit: {outcome.error}")
        await served(server, kind, depth, talk=True)

    async def served(server: LiveServer, kind: Kind, depth: int, *, talk: bool) -> None:
        try:
            await check_served(server, kind, depth, accepted=not outcomes[kind.name, depth].refused, talk=talk)
        except Exception as exc:
            when = "" if talk else " after the restart"
            problems.append(f"{kind.name} {depth}: not served{when}: {str(exc).splitlines()[0][:120]}")

    with serve(data) as server:
        await run_cases(server, CASES, attack)
    with serve(data) as server:  # a restart on the same data: every room still serves
        await run_cases(server, CASES, lambda server, kind, depth: served(server, kind, depth, talk=False))
    assert len(outcomes) == len(CASES)
    assert not problems, "\n".join(sorted(problems))


# ---- values server code produces ------------------------------------------------------------------


@pytest.fixture
def server(data: Path) -> Iterator[LiveServer]:
    with serve(data) as live:
        yield live


async def fresh_reads(server: LiveServer, name: str) -> tuple[Any, list[dict[str, Any]]]:
    async with client(server, name) as fresh:
        over_http = [m.to_json() for m in await fresh.get_messages()]
        assert [m.to_json() for m in fresh.messages] == over_http
        async with httpx.AsyncClient() as http:
            response = await http.get(server.http_url(AGENT, name, "get-messages"))
        assert response.status_code == 200
        return fresh.state, over_http


@pytest.mark.parametrize("depth", [MAX_DEPTH - IN_PART + 1, 100, 250, 300])
async def test_a_tool_output_too_deep_becomes_a_tool_error_and_the_transcript_serves(
        server: LiveServer, depth: int) -> None:
    async with client(server, f"tool-{depth}") as a:
        turn = await (await a.send_chat(f"deep output {depth}"))
        assert turn.outcome == "completed", turn.error
    _, messages = await fresh_reads(server, f"tool-{depth}")
    (part,) = [ToolPart.model_validate(p) for m in messages for p in m["parts"] if p.get("toolCallId") == "out1"]
    assert part.state == "output-error" and part.output is None
    assert f"limit of {MAX_DEPTH}" in (part.error_text or ""), part.error_text
    assert messages[-1]["parts"][-1]["text"] == "Done."  # the model was told, and answered


async def test_a_tool_output_at_the_limit_is_kept(server: LiveServer) -> None:
    depth = MAX_DEPTH - IN_PART
    async with client(server, "tool-ok") as a:
        turn = await (await a.send_chat(f"deep output {depth}"))
        assert turn.outcome == "completed", turn.error
    _, messages = await fresh_reads(server, "tool-ok")
    (part,) = [p for m in messages for p in m["parts"] if p.get("toolCallId") == "out1"]
    assert part["state"] == "output-available" and depth_of_nested(part["output"]) == depth


@pytest.mark.parametrize("depth", [MAX_DEPTH - IN_PART + 1, 250, 300])
async def test_a_model_tool_input_too_deep_is_a_tool_input_error(server: LiveServer, depth: int) -> None:
    async with client(server, f"input-{depth}") as a:
        turn = await (await a.send_chat(f"deep input {depth}"))
        assert turn.outcome == "completed", turn.error
    _, messages = await fresh_reads(server, f"input-{depth}")
    (part,) = [ToolPart.model_validate(p) for m in messages for p in m["parts"] if p.get("toolCallId") == "in1"]
    assert part.state == "output-error"
    assert f"limit of {MAX_DEPTH}" in (part.error_text or ""), part.error_text
    assert not isinstance(part.input, dict | list) or part.input == {}


@pytest.mark.parametrize("depth", [MAX_DEPTH - IN_PART + 1, 250, 300])
async def test_a_data_part_too_deep_fails_the_tool_that_writes_it(server: LiveServer, depth: int) -> None:
    async with client(server, f"data-{depth}") as a:
        turn = await (await a.send_chat(f"deep data {depth}"))
        assert turn.outcome == "completed", turn.error
    _, messages = await fresh_reads(server, f"data-{depth}")
    parts = [p for m in messages for p in m["parts"]]
    assert not [p for p in parts if p["type"] == "data-deep"]
    (call,) = [ToolPart.model_validate(p) for p in parts if p.get("toolCallId") == "data1"]
    assert call.state == "output-error" and f"limit of {MAX_DEPTH}" in (call.error_text or ""), call.error_text


async def test_a_data_part_at_the_limit_is_kept(server: LiveServer) -> None:
    depth = MAX_DEPTH - IN_PART
    async with client(server, "data-ok") as a:
        turn = await (await a.send_chat(f"deep data {depth}"))
        assert turn.outcome == "completed", turn.error
    _, messages = await fresh_reads(server, "data-ok")
    (data,) = [DataPart.model_validate(p) for m in messages for p in m["parts"] if p["type"] == "data-deep"]
    assert depth_of_nested(data.data) == depth


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 250, 254, 300])
async def test_set_state_from_an_rpc_call_refuses_a_state_too_deep(server: LiveServer, depth: int) -> None:
    async with client(server, f"rpc-state-{depth}") as a:
        await a.call("set_nested", 3)
        with pytest.raises(Exception, match=f"limit is {MAX_DEPTH}"):
            await a.call("set_nested", depth)
    state, _ = await fresh_reads(server, f"rpc-state-{depth}")
    assert depth_of_nested(state) == 3


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 250])
async def test_rpc_arguments_too_deep_are_refused(server: LiveServer, depth: int) -> None:
    async with client(server, f"rpc-args-{depth}") as a:
        with pytest.raises(Exception, match=f"limit is {MAX_DEPTH}"):
            await a.call("keep", nested(depth))
        assert await a.call("keep", nested(MAX_DEPTH)) == "kept"
    state, _ = await fresh_reads(server, f"rpc-args-{depth}")
    assert depth_of_nested(state) == MAX_DEPTH


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 254, 300])
async def test_an_rpc_result_too_deep_is_an_error_answer(server: LiveServer, depth: int) -> None:
    async with client(server, "rpc-result") as a:
        with pytest.raises(Exception, match=f"limit is {MAX_DEPTH}"):
            await a.call("nested_result", depth)
        assert depth_of_nested(await a.call("nested_result", MAX_DEPTH)) == MAX_DEPTH
        assert await a.call("ping") == "pong"


@pytest.mark.parametrize("depth", [100, 300])
async def test_model_metadata_too_deep_is_left_out_and_the_turn_is_kept(server: LiveServer, depth: int) -> None:
    async with client(server, f"reasoning-{depth}") as a:
        turn = await (await a.send_chat(f"deep reasoning {depth}"))
        assert turn.outcome == "completed", turn.error
        assert turn.text == "Answered."
    _, messages = await fresh_reads(server, f"reasoning-{depth}")
    reply = messages[-1]
    assert [p["type"] for p in reply["parts"] if p["type"] != "step-start"] == ["reasoning", "text"]
    assert [p.get("text") for p in reply["parts"] if p["type"] in ("reasoning", "text")] == ["Thinking.", "Answered."]
    assert "providerMetadata" not in reply["parts"][-2]
