"""Steering a running turn (`when_busy="steer"`): the new user message joins the running turn at
its next step boundary, is saved after the reply so far, and the model's next call sees it."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.gated import GatedModel
from think import ProtocolError, Think, TurnResult, open_agent, tool
from think.models.base import ModelRequest, ToolMessage
from think.testing.models import Reply, ScriptedModel, call
from think.tools.tool import ToolContext


def script(request: ModelRequest) -> Reply:
    said = request.last_user_text
    results = sum(len(m.results) for m in request.messages if isinstance(m, ToolMessage))
    if isinstance(request.messages[-1], ToolMessage):
        return f"Plan finished after {results} tool results."
    if said.startswith("plan"):
        return call("wait_gate")
    return f"Noted: {said} (after {results} tool results)."


class Steered(Think):
    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.model = ScriptedModel(script)
        self.in_tool = anyio.Event()
        self.gate = anyio.Event()

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> list[Any]:
        return [wait_gate]


@tool
async def wait_gate(ctx: ToolContext) -> str:
    """Wait until the test opens the gate."""
    agent = ctx.agent
    assert isinstance(agent, Steered)
    agent.in_tool.set()
    await agent.gate.wait()
    return "gate opened"


async def until(condition: Any, within: float = 10.0) -> None:
    """Poll `condition()` until it holds (several things, no single event to wait on)."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await anyio.sleep(0.005)


def transcript(agent: Think) -> list[tuple[str, str, list[str]]]:
    return [(m.role, m.text, [p.type for p in m.parts if p.type.startswith("tool-")]) for m in agent.messages]


async def test_a_steered_message_joins_the_running_turn_at_its_next_step_boundary(tmp_path: Path) -> None:
    async with open_agent(Steered, "steer", data_dir=tmp_path) as agent:
        results: dict[str, TurnResult] = {}

        async def send(key: str, text: str, **kwargs: Any) -> None:
            results[key] = await agent.save_messages(text, **kwargs)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(send, "first", "plan the trip")
            await agent.in_tool.wait()  # the first model call's tool runs
            tasks.start_soon(partial(send, "steer", "and book a hotel", when_busy="steer"))
            await until(lambda: agent.steering.pending() or agent.turn_queue.waiting > 0)
            agent.gate.set()
    assert transcript(agent) == [
        ("user", "plan the trip", []),
        ("assistant", "", ["tool-wait_gate"]),  # the first turn ended at the boundary
        ("user", "and book a hotel", []),
        ("assistant", "Noted: and book a hotel (after 1 tool results).", []),
    ]
    assert len(agent.model.requests) == 2  # no model call of the first turn after its tool
    assert results["first"].status == "completed" and results["steer"].status == "completed"
    assert results["steer"].message is not None and results["steer"].message.id == agent.messages[-1].id


class GatedFirst(Steered):
    """`gated …` answers with text only, held open until the gate opens: no step boundary."""

    def get_model(self) -> Any:
        history = self.session.history()
        if history and history[-1].text.startswith("gated"):
            return GatedModel(lambda: self.gate)
        return self.model


async def test_a_turn_that_ends_before_a_boundary_runs_the_steered_message_next(tmp_path: Path) -> None:
    async with open_agent(GatedFirst, "no-boundary", data_dir=tmp_path) as agent:
        results: dict[str, TurnResult] = {}

        async def send(key: str, text: str, when_busy: Any = "queue") -> None:
            results[key] = await agent.save_messages(text, when_busy=when_busy)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(send, "first", "gated hello")
            await until(lambda: agent.streams.live is not None)
            tasks.start_soon(send, "queued", "queued after")
            await until(lambda: agent.turn_queue.waiting > 0)
            tasks.start_soon(send, "steer", "steered in", "steer")
            await until(agent.steering.pending)
            agent.gate.set()
    # The steered message is the next turn, ahead of the one queued before it.
    assert [(m.role, m.text) for m in agent.messages] == [
        ("user", "gated hello"), ("assistant", "w01 w02 w03 w04 w05"),
        ("user", "steered in"), ("assistant", "Noted: steered in (after 0 tool results)."),
        ("user", "queued after"), ("assistant", "Noted: queued after (after 0 tool results)."),
    ]
    assert not results["first"].steered and all(r.status == "completed" for r in results.values())


async def test_messages_steered_before_one_boundary_are_saved_in_order_and_answered_together(tmp_path: Path) -> None:
    async with open_agent(Steered, "two", data_dir=tmp_path) as agent:
        results: dict[str, TurnResult] = {}

        async def send(key: str, text: str, when_busy: Any = "queue") -> None:
            results[key] = await agent.save_messages(text, request_id=key, when_busy=when_busy)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(send, "first", "plan it")
            await agent.in_tool.wait()
            tasks.start_soon(send, "one", "first thought", "steer")
            await until(agent.steering.pending)
            tasks.start_soon(send, "two", "second thought", "steer")
            await until(lambda: len(agent.steering._host.inbox) == 2 if agent.steering._host else False)
            agent.gate.set()
    assert [(m.role, m.text) for m in agent.messages] == [
        ("user", "plan it"), ("assistant", ""), ("user", "first thought"), ("user", "second thought"),
        ("assistant", "Noted: second thought (after 1 tool results)."),
    ]
    assert results["first"].steered
    # the newest steered turn answered both: the older one ends with that turn's result
    assert results["one"].request_id == results["two"].request_id == "two"
    assert results["one"].message == results["two"].message == agent.messages[-1]


async def test_a_steered_message_withdrawn_before_the_boundary_is_never_saved_and_the_turn_goes_on(
        tmp_path: Path) -> None:
    async with open_agent(Steered, "withdrawn", data_dir=tmp_path) as agent:
        results: dict[str, TurnResult] = {}
        signal = anyio.Event()

        async def first() -> None:
            results["first"] = await agent.save_messages("plan again")

        async def steer() -> None:
            results["steer"] = await agent.save_messages("never mind", when_busy="steer", signal=signal)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(first)
            await agent.in_tool.wait()
            tasks.start_soon(steer)
            await until(agent.steering.pending)
            signal.set()
            await until(lambda: not agent.steering.pending())
            agent.gate.set()
    assert [(m.role, m.text) for m in agent.messages] == [
        ("user", "plan again"), ("assistant", "Plan finished after 1 tool results.")]
    assert results["steer"].status in ("skipped", "aborted") and not results["first"].steered


async def test_when_busy_takes_queue_or_steer(tmp_path: Path) -> None:
    async with open_agent(Steered, "bad", data_dir=tmp_path) as agent:
        with pytest.raises(ProtocolError, match="when_busy"):
            await agent.save_messages("hi", when_busy="interrupt")  # type: ignore[arg-type]
        result = await agent.save_messages("idle agent", when_busy="steer")  # nothing runs: an ordinary turn
        assert result.status == "completed" and agent.messages[-1].text.startswith("Noted: idle agent")


async def test_a_steered_submission_is_stored_before_it_is_acknowledged_and_joins_the_turn(tmp_path: Path) -> None:
    async with open_agent(Steered, "submit", data_dir=tmp_path) as agent, anyio.create_task_group() as tasks:
        tasks.start_soon(partial(agent.save_messages, "plan the week"))
        await agent.in_tool.wait()
        pending = await agent.submit_messages("queued job")  # an ordinary submission, accepted first
        steered = await agent.submit_messages("add a review", when_busy="steer")
        stored = agent.inspect_submission(steered.submission_id)
        assert steered.accepted and stored is not None and stored.status == "pending"
        await until(agent.steering.pending)
        agent.gate.set()
        done = await agent.wait_for_submission(steered.submission_id, timeout=10)
        await agent.wait_for_submission(pending.submission_id, timeout=10)
    assert done.status == "completed"
    assert [(m.role, m.text) for m in agent.messages] == [
        ("user", "plan the week"), ("assistant", ""),
        ("user", "add a review"), ("assistant", "Noted: add a review (after 1 tool results)."),
        ("user", "queued job"), ("assistant", "Noted: queued job (after 1 tool results)."),
    ]
