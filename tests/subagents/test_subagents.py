"""Sub-agents in one process: stubs, chat() streaming back, agent tools, caps, abort and delete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from tests.subagents.agents import Lead, Researcher
from tests.submissions.server_process import eventually
from think import ConfigurationError, EmbeddedRuntime, Think, TurnResult, open_agent
from think.stream.fanout import AgentToolEvent, TurnEvent
from think.subagents.children import SubAgentStub
from think.turns.callbacks import ChatCallback


def collect(agent: Think) -> list[AgentToolEvent]:
    events: list[AgentToolEvent] = []

    async def listen(event: TurnEvent) -> None:
        if isinstance(event, AgentToolEvent):
            events.append(event)

    agent.fanout.subscribe(listen)
    return events


async def test_a_stub_runs_methods_and_chat_on_the_child_with_its_own_database(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    parent = await runtime.get(Lead, "boss")
    child = await parent.sub_agent(Researcher, "r1")
    assert isinstance(child, SubAgentStub) and child.address == "lead/boss/sub/researcher/r1"
    assert await child.shout("hello") == "HELLO (from lead/boss/sub/researcher/r1)"

    chunks: list[dict[str, Any]] = []
    done = anyio.Event()
    result = await child.chat("tides", ChatCallback(on_event=lambda body: chunks.append(orjson.loads(body)),
                                                    on_done=done.set))
    assert isinstance(result, TurnResult) and result.status == "completed" and done.is_set()
    deltas = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert deltas == "Findings on tides: it is well studied."
    assert len([c for c in chunks if c["type"] == "text-delta"]) == 4  # streamed, not at the end

    assert [m.text for m in await child.get_messages()] == ["tides", deltas]
    assert parent.messages == []  # the parent's transcript is its own
    assert runtime.path_for(Researcher, child.address).exists()
    assert parent.sub_agents.list() == [("researcher", "r1")]
    with pytest.raises(AttributeError, match="no method 'nope'"):
        await child.nope()
    with pytest.raises(AttributeError):
        await child.call("_framework_start")
    await runtime.close()


@pytest.mark.parametrize(("cls", "name", "message"), [
    (object, "x", "needs an Agent subclass"),
    ("Researcher", "x", "needs an Agent subclass"),
    (Researcher, "a/b", "cannot contain '/'"),
    (Researcher, "", "non-empty"),
])
async def test_bad_sub_agents_are_refused_and_nothing_is_recorded(data_dir: Path, cls: Any, name: str,
                                                                 message: str) -> None:
    async with open_agent(Lead, "strict", data_dir=data_dir) as parent:
        with pytest.raises(ConfigurationError, match=message):
            await parent.sub_agent(cls, name)
        assert parent.sub_agents.list() == []


async def test_an_agent_tool_streams_the_childs_answer_to_the_parent_and_the_model_uses_it(
        data_dir: Path) -> None:
    async with open_agent(Lead, "tool", data_dir=data_dir) as parent:
        events = collect(parent)
        result = await parent.save_messages(["coral reefs"])
        assert result.status == "completed"
        assert parent.messages[-1].text == "Summary: Findings on coral reefs: it is well studied."
        part = parent.messages[-1].tool_parts[0]
        assert (part.name, part.state) == ("researcher", "output-available")
        kinds = [e.event["kind"] for e in events]
        assert kinds[0] == "started" and kinds[-1] == "finished" and set(kinds[1:-1]) == {"chunk"}
        assert [e.sequence for e in events] == list(range(len(events)))
        assert all(e.parent_tool_call_id == part.tool_call_id for e in events)
        run_id = events[0].event["runId"]
        assert events[0].event == {"kind": "started", "runId": run_id, "agentType": "researcher",
                                   "inputPreview": "coral reefs", "order": 0, "display": {"name": "Researcher"}}
        bodies = [orjson.loads(e.event["body"]) for e in events if e.event["kind"] == "chunk"]
        assert "".join(b["delta"] for b in bodies if b["type"] == "text-delta").startswith("Findings on coral")
        assert events[-1].event["summary"] == "Findings on coral reefs: it is well studied."
        child = await parent.sub_agent(Researcher, run_id)  # the run's child stays, addressable
        assert [m.role for m in await child.get_messages()] == ["user", "assistant"]


async def test_over_the_cap_an_agent_tool_fails_at_once(data_dir: Path) -> None:
    class Capped(Lead):
        max_concurrent_agent_tools = 0

    async with open_agent(Capped, "capped", data_dir=data_dir) as parent:
        events = collect(parent)
        await parent.save_messages(["anything"])
        assert parent.messages[-1].text.startswith("The researcher failed: Too many agent tools are running")
        assert events == [] and parent.sub_agents.list() == []


async def test_abort_then_delete_a_sub_agent(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    parent = await runtime.get(Lead, "boss")
    child = await parent.sub_agent(Researcher, "digger")
    streaming = anyio.Event()
    results: list[TurnResult] = []

    def on_event(body: str) -> None:
        if "text-delta" in body:
            streaming.set()

    async with anyio.create_task_group() as tasks:
        async def run() -> None:
            results.append(await child.chat("forever and ever", ChatCallback(on_event=on_event)))

        tasks.start_soon(run)
        with anyio.fail_after(5):
            await streaming.wait()
        assert await parent.abort_sub_agent(Researcher, "digger", "enough") == 1
    assert results[0].status == "aborted"
    assert [m.text for m in await child.get_messages()] == ["forever and ever", "Digging into it "]
    path = runtime.path_for(Researcher, child.address)
    assert await parent.delete_sub_agent(Researcher, "digger")
    assert not path.exists() and parent.sub_agents.list() == []
    assert not await parent.delete_sub_agent(Researcher, "digger")
    assert await parent.abort_sub_agent(Researcher, "digger") == 0
    await runtime.close()


async def test_cancelling_the_parent_turn_cancels_the_child_which_keeps_its_partial(data_dir: Path) -> None:
    async with open_agent(Lead, "cancel", data_dir=data_dir) as parent:
        events = collect(parent)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: parent.save_messages(["forever, please"], request_id="parent-turn"))
            await eventually(lambda: any(e.event["kind"] == "chunk" for e in events), within=5)
            assert parent.cancel_chat("parent-turn")
        assert events[-1].event["kind"] == "aborted"
        child = await parent.sub_agent(Researcher, events[0].event["runId"])
        assert [m.text for m in await child.get_messages()] == ["forever, please", "Digging into it "]
        assert not (await parent.sub_agent(Researcher, events[0].event["runId"])).address.endswith("/")


async def test_a_named_run_asked_again_returns_its_answer_without_a_second_child_turn(data_dir: Path) -> None:
    async with open_agent(Lead, "again", data_dir=data_dir) as parent:
        first = await parent.run_agent_tool(Researcher, input="tides", run_id="run-1")
        asked = len(Researcher.model.requests)
        events = collect(parent)
        again = await parent.run_agent_tool(Researcher, input="tides", run_id="run-1")
        assert again.status == "completed" and again.output == first.output
        assert len(Researcher.model.requests) == asked  # collected, not run again
        assert events[-1].event["kind"] == "finished" and events[-1].event["reattached"] is True
        first_run = [f for f in parent.agent_tool_runs.frames() if f["event"]["runId"] == "run-1"]
        # Numbering goes on after the first call's events, so clients' replay/live dedupe holds.
        assert [e.sequence for e in events] == [len(first_run) - 2, len(first_run) - 1]
        assert [f["sequence"] for f in first_run] == list(range(len(first_run)))
        child = await parent.sub_agent(Researcher, "run-1")
        assert [m.role for m in await child.get_messages()] == ["user", "assistant"]
        other = await parent.run_agent_tool(Researcher, input="waves", run_id="run-2")
        assert other.output == "Findings on waves: it is well studied."


async def test_a_prompt_the_child_saved_but_never_answered_is_answered_once(data_dir: Path) -> None:
    async with open_agent(Lead, "half", data_dir=data_dir) as parent:
        child = await parent.sub_agent(Researcher, "run-9")
        await child.add_messages(["currents"])  # a crash right after the child saved the prompt
        result = await parent.run_agent_tool(Researcher, input="currents", run_id="run-9")
        assert result.output == "Findings on currents: it is well studied."
        assert [(m.role, m.text) for m in await child.get_messages()] == [
            ("user", "currents"), ("assistant", "Findings on currents: it is well studied.")]


async def test_agent_tool_run_ids_are_stable_per_call_and_rerun_on_recovery(data_dir: Path) -> None:
    from think.tools.tool import ToolContext

    async with open_agent(Lead, "ids", data_dir=data_dir) as parent:
        [tool] = parent.get_tools()
        assert tool.recovery == "rerun"
        ctx = ToolContext(tool_call_id="call-7", tool_name=tool.name, message_id="m-1", agent=parent)
        events = collect(parent)
        assert tool.execute is not None
        first = await tool.execute({"prompt": "kelp"}, ctx)
        asked = len(Researcher.model.requests)
        assert await tool.execute({"prompt": "kelp"}, ctx) == first  # the recovery's rerun
        assert len(Researcher.model.requests) == asked
        runs = {e.event["runId"] for e in events}
        assert len(runs) == 1
        other = ToolContext(tool_call_id="call-7", tool_name=tool.name, message_id="m-2", agent=parent)
        await tool.execute({"prompt": "kelp"}, other)  # another message: another run
        assert len({e.event["runId"] for e in events}) == 2


async def test_a_child_whose_stream_stalls_is_recovered_and_the_parent_gets_the_whole_answer(
        data_dir: Path) -> None:
    from tests.subagents.agents import Stalling, StallLead
    from think.testing.models import HANG, ScriptedModel, text

    Stalling.model = ScriptedModel([[text("Dig"), HANG], "ging done."])
    async with open_agent(StallLead, "stall", data_dir=data_dir) as parent:
        result = await parent.save_messages(["tunnels"])
        assert result.status == "completed"
        assert parent.messages[-1].text == "Summary: Digging done."
        part = parent.messages[-1].tool_parts[0]
        assert (part.state, part.output) == ("output-available", "Digging done.")
