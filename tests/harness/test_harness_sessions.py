"""`ThinkHarness` sessions other than the root: client tools registered with a submission, tool
answers and approvals with their continuation, and operation events from `subscribe` when the
harness is a face over an agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from think import Think, open_agent, tool
from think.harness import Answered, ThinkHarness, Unanswered
from think.models.base import ModelRequest, ToolMessage
from think.testing.models import HANG, Reply, ScriptedModel, call, text
from think.turns.continuation import ToolAnswer

CITY = {"name": "get_city", "description": "Where the user is", "parameters": {"type": "object", "properties": {}}}


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return key.upper()


def asks(request: ModelRequest) -> Reply:
    if isinstance(request.messages[-1], ToolMessage):
        return f"Answer: {request.messages[-1].results[0].output}."
    if request.last_user_text.startswith("where"):
        return call("get_city", id="city-1")
    return call("lookup", id="look-1", key=request.last_user_text.split()[-1])


async def test_a_submission_registers_client_tools_the_session_answers_for(tmp_path: Path) -> None:
    model = ScriptedModel(asks)
    async with ThinkHarness(model=model, tools=[lookup], data_dir=tmp_path) as harness:
        ui = harness.session("ui")
        shadow = {"name": "lookup", "description": "a client's lookup"}
        accepted = await ui.submit("where am I?", client_tools=[CITY, shadow], operation_id="op-city")
        assert accepted.accepted and accepted.ignored_tools == ("lookup",)  # a server tool keeps its name
        assert isinstance(await ui.wait("op-city", timeout=10), Answered)
        offered = {spec.name for spec in model.requests[-1].tools}
        assert {"get_city", "lookup"} <= offered
        part = ui.messages()[-1].parts[-1]
        assert getattr(part, "state", None) == "input-available"  # waits for the client
        answer = await ui.add_tool_result("city-1", {"city": "Lisbon"}, source="client")
        assert isinstance(answer, ToolAnswer) and answer.continuation is not None
        assert ui.messages()[-1].text == "Answer: {'city': 'Lisbon'}."
        # another session never registered get_city: a client's answer there is refused
        other = harness.session("other")
        await other.submit("where now?", operation_id="op-other")
        await other.wait("op-other", timeout=10)
        refused = await other.add_tool_result("city-1", "Porto", source="client")
        assert isinstance(refused, Unanswered) and refused.reason == "not_client_tool"


async def test_approvals_and_server_answers_in_a_session_carry_the_turn_on(tmp_path: Path) -> None:
    async with ThinkHarness(model=ScriptedModel(asks), tools=[lookup], tool_approval=lambda c: True,
                            data_dir=tmp_path) as harness:
        work = harness.session("work")
        held = await work.prompt("lookup secret")
        assert getattr(held.messages[-1].parts[-1], "state", None) == "approval-requested"
        forged = await work.add_tool_result("look-1", "forged", source="client")
        assert isinstance(forged, Unanswered) and forged.reason == "not_client_tool"
        approved = await work.approve_tool_call("look-1", True)
        assert isinstance(approved, ToolAnswer) and approved.continuation is not None
        assert work.messages()[-1].text == "Answer: SECRET."
        assert harness.session().messages() == []  # the root transcript never saw it


class Hosted(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: f"hosted: {request.last_user_text}")


async def test_subscribe_over_an_agent_gets_operation_events(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    async with open_agent(Hosted, "host", data_dir=tmp_path) as agent:
        harness = ThinkHarness.of(agent)
        side = harness.sessions.create(id="side")
        stop = side.subscribe(seen.append)
        root_seen: list[dict[str, Any]] = []
        harness.session().subscribe(root_seen.append)
        accepted = await side.submit("queued", operation_id="op-side")
        assert await side.wait(accepted.operation_id, timeout=10) == Answered("done", "hosted: queued",
                                                                           side.messages()[-1])
        stop()
        await side.prompt("after")
    operations = [(e["operationId"], e["status"]) for e in seen if e["type"] == "operation"]
    assert operations == [("op-side", "pending"), ("op-side", "running"), ("op-side", "completed")]
    assert not [e for e in root_seen if e["type"] == "operation"]  # another session's operation
    assert sum(e["type"] == "run-start" for e in seen) == 1  # unsubscribed before "after"


async def test_in_flight_shows_a_sessions_running_turn_with_its_chunks(tmp_path: Path) -> None:
    gate = anyio.Event()

    @tool
    async def slow() -> str:
        """Wait for the gate."""
        await gate.wait()
        return "opened"

    model = ScriptedModel([[text("Starting."), call("slow", id="slow-1")], "Finished."])
    async with ThinkHarness(model=model, tools=[slow], data_dir=tmp_path) as harness:
        work = harness.session("work")
        assert work.in_flight() is None
        accepted = await work.submit("go", operation_id="op-slow")
        with anyio.fail_after(10):
            # polled: chunks arrive on the turn's own task
            while not any(c["type"] == "tool-input-available" for c in getattr(work.in_flight(), "chunks", ())):  # noqa: ASYNC110
                await anyio.sleep(0.01)
        flight = work.in_flight()
        assert flight is not None and flight.request_id == "op-slow" and not flight.orphaned
        assert "".join(c.get("delta", "") for c in flight.chunks if c["type"] == "text-delta") == "Starting."
        assert harness.session().in_flight() is None and harness.session("idle").in_flight() is None
        gate.set()
        assert isinstance(await work.wait(accepted.operation_id, timeout=10), Answered)
        assert work.in_flight() is None  # the reply is in the session now


async def test_a_pending_submissions_client_tools_survive_a_restart(tmp_path: Path) -> None:
    def first(request: ModelRequest) -> Reply:
        return HANG if request.last_user_text == "block" else asks(request)

    async with ThinkHarness(model=ScriptedModel(first), data_dir=tmp_path) as harness:
        ui = harness.session("ui")
        await ui.submit("block", operation_id="op-block")
        with anyio.fail_after(10):
            while ui.in_flight() is None:  # noqa: ASYNC110 - polled: the turn starts in the drain
                await anyio.sleep(0.01)
        queued = await ui.submit("where am I?", client_tools=[CITY], operation_id="op-city")
        assert queued.accepted and [s.submission_id for s in ui.pending()] == ["op-block", "op-city"]
    model = ScriptedModel(lambda request: "unblocked" if request.last_user_text == "block" else asks(request))
    async with ThinkHarness(model=model, data_dir=tmp_path) as harness:  # the same database
        ui = harness.session("ui")
        assert isinstance(await ui.wait("op-city", timeout=10), Answered)
        assert "get_city" in {spec.name for spec in model.requests[-1].tools}
        answer = await ui.add_tool_result("city-1", "Faro", source="client")
        assert isinstance(answer, ToolAnswer) and ui.messages()[-1].text == "Answer: Faro."
