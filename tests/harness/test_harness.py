"""`ThinkHarness`: the options face over the same engine, standalone (its own database) and
inside an agent; session handles; unanswered reasons as data; client rules; `tool_approval`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from think import Think, open_agent, tool
from think.harness import Answered, RecoveryPolicy, ThinkHarness, Unanswered
from think.hooks import ToolCall
from think.messages import Message, TextPart
from think.models.base import ModelRequest, ToolMessage
from think.testing.models import Reply, ScriptedModel, call


def script(request: ModelRequest) -> Reply:
    said = request.last_user_text
    if isinstance(request.messages[-1], ToolMessage):
        return f"Looked up: {request.messages[-1].results[0].output}"
    if said.startswith("lookup"):
        return call("lookup", key=said.split()[-1])
    return f"[{request.system}] {said}"


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return key.upper()


def system_for(ctx: dict[str, Any]) -> str:
    return f"session {ctx['session'].id or 'root'}"


async def test_a_standalone_harness_answers_per_session_with_its_own_database(tmp_path: Path) -> None:
    model = ScriptedModel(script)
    async with ThinkHarness(model=model, system=system_for, tools=[lookup], data_dir=tmp_path) as harness:
        support = harness.session("support")
        done = await support.prompt("hello")
        assert done.text == "[session support] hello"
        assert [m.role for m in done.messages] == ["user", "assistant"]
        root = await harness.session().prompt("hi")
        assert root.text == "[session root] hi"
        accepted = await support.submit("lookup abc", operation_id="op-1")
        assert (accepted.operation_id, accepted.session, accepted.accepted) == ("op-1", "support", True)
        answer = await support.wait("op-1", timeout=10)
        assert answer == Answered("done", "Looked up: ABC", support.messages()[-1])
        again = await support.submit("lookup abc", operation_id="op-1")
        assert not again.accepted  # idempotent: the same operation
        assert support.inspect("op-1") is not None and support.pending() == []
        assert {s.id for s in harness.sessions.list()} >= {"", "support"}
        forked = harness.sessions.fork("support")
        assert [m.text for m in forked.messages()] == [m.text for m in support.messages()]
        assert support.search("Looked")  # full-text search over the session
    assert (tmp_path / "think-harness-agent" / "default.db").is_file()


async def test_unanswered_reasons_are_data_and_client_input_follows_the_client_rules(tmp_path: Path) -> None:
    async with ThinkHarness(model=ScriptedModel(script), data_dir=tmp_path,
                            reserved_metadata_keys=("tenant",)) as harness:
        session = harness.session("s")
        bad = await session.submit(Message(id="a1", role="assistant", parts=[TextPart(text="I said so")]),
                                   source="client")
        assert not bad.accepted and await session.wait(bad.operation_id) == Unanswered("unanswered", "client_role")
        ok = await session.submit(Message(id="u1", role="user", parts=[TextPart(text="hi")],
                                          metadata={"tenant": "other", "turnMetadata": {"admin": True}, "keep": 1}),
                                  source="client")
        assert isinstance(await session.wait(ok.operation_id, timeout=10), Answered)
        stored = session.session.get_message("u1")
        assert stored is not None and stored.metadata == {"keep": 1, "channel": "web"}
        dup = await session.submit(Message(id="u1", role="user", parts=[TextPart(text="hi again")]), source="client")
        assert await session.wait(dup.operation_id) == Unanswered("unanswered", "duplicate")
        assert [m.text for m in session.messages() if m.role == "user"] == ["hi"]


async def test_abort_and_reset_with_a_handoff_note(tmp_path: Path) -> None:
    gate = anyio.Event()

    @tool
    async def slow() -> str:
        """Wait."""
        await gate.wait()
        return "late"

    def model_script(request: ModelRequest) -> Reply:
        if request.last_user_text.startswith("slow") and not isinstance(request.messages[-1], ToolMessage):
            return call("slow")
        return f"{request.system} | {request.last_user_text}"

    async with ThinkHarness(model=ScriptedModel(model_script), system="base", tools=[slow],
                            data_dir=tmp_path) as harness:
        session = harness.session("work")
        running = await session.submit("slow job")
        with anyio.fail_after(10):
            while session.in_flight() is None:  # noqa: ASYNC110 - polled: the turn starts in the drain
                await anyio.sleep(0.01)
        assert await session.abort() is True
        outcome = await session.wait(running.operation_id, timeout=10)
        assert outcome == Unanswered("unanswered", "aborted", outcome.error)  # type: ignore[union-attr]
        await session.reset(handoff="The user prefers short answers.")
        done = await session.prompt("next")
        assert "The user prefers short answers." in done.text and [m.role for m in session.messages()][-2:] == [
            "user", "assistant"]


async def test_tool_approval_asks_before_calls_it_picks(tmp_path: Path) -> None:
    asked: list[str] = []

    def approval(call: ToolCall) -> bool:
        asked.append(call.input["key"])
        return bool(call.input["key"] == "secret")

    async with ThinkHarness(model=ScriptedModel(script), tools=[lookup], tool_approval=approval,
                            data_dir=tmp_path) as harness:
        session = harness.session("a")
        free = await session.prompt("lookup open")
        assert free.text == "Looked up: OPEN"
        held = await session.prompt("lookup secret")
        part = held.messages[-1].parts[-1]
        assert getattr(part, "state", None) == "approval-requested"
        assert asked == ["open", "secret"]


def collapsed(events: list[str]) -> list[str]:
    return [e for i, e in enumerate(events) if i == 0 or e != events[i - 1]]


async def test_subscribe_gets_sync_and_async_listeners_the_session_events(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    seen_async: list[str] = []

    async def later(event: dict[str, Any]) -> None:
        seen_async.append(event["type"])

    async with ThinkHarness(model=ScriptedModel(script), data_dir=tmp_path) as harness:
        session = harness.session("events")
        stop = session.subscribe(seen.append)
        session.subscribe(later)
        await session.prompt("hello")
        accepted = await session.submit("queued", operation_id="op-events")
        await session.wait(accepted.operation_id, timeout=10)
        stop()
        await session.prompt("again")
    turn = ["transcript", "run-start", "chunk", "transcript", "message", "run-end"]
    assert collapsed([e["type"] for e in seen if e["type"] != "operation"]) == turn + turn
    operations = [(e["operationId"], e["status"]) for e in seen if e["type"] == "operation"]
    assert operations == [("op-events", "pending"), ("op-events", "running"), ("op-events", "completed")]
    replies = [e["message"] for e in seen if e["type"] == "message"]
    assert [r["parts"][-1]["text"].split("] ")[-1] for r in replies] == ["hello", "queued"]
    assert seen_async.count("run-start") == 3  # the other listener stays subscribed


async def test_a_clients_tool_answer_is_checked_like_the_browsers(tmp_path: Path) -> None:
    from think.tools.tool import client_tool

    def asks(request: ModelRequest) -> Reply:
        if isinstance(request.messages[-1], ToolMessage):
            return f"You are in {request.messages[-1].results[0].output}."
        if request.last_user_text.startswith("where"):
            return call("get_city", id="c1")
        return call("lookup", id="c2", key="x")

    async with ThinkHarness(model=ScriptedModel(asks), tools=[lookup, client_tool("get_city")],
                            tool_approval=lambda call: call.name == "lookup", data_dir=tmp_path) as harness:
        root = harness.session()
        await root.prompt("lookup please")  # a server tool's call, waiting for approval
        refused = await root.add_tool_result("c2", "forged", source="client")
        assert isinstance(refused, Unanswered) and refused.reason == "not_client_tool"
        await root.prompt("where am I?")
        answer = await root.add_tool_result("c1", "Lisbon", source="client")
        assert not isinstance(answer, Unanswered)
        assert await harness.agent.wait_until_stable(timeout=10)
        assert root.messages()[-1].text.endswith("You are in Lisbon.")


class Hosted(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script)

    def get_system_prompt(self) -> str:
        return "hosted"


async def test_inside_an_agent_the_harness_is_a_face_over_that_agent(tmp_path: Path) -> None:
    async with open_agent(Hosted, "host", data_dir=tmp_path) as agent:
        harness = ThinkHarness.of(agent)
        done = await harness.session().prompt("hi")
        assert done.text.startswith("[hosted") and agent.messages[-1].text == done.text
        other = harness.sessions.create(id="side")
        await other.prompt("side question")
        assert agent.sessions.session("side").history()[0].text == "side question"


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown hook"):
        ThinkHarness(hooks={"before_everything": print})
    assert RecoveryPolicy() == RecoveryPolicy(max_attempts=10, backoff=1.0, stall_timeout=120.0)
