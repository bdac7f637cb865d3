"""Answering waiting tool calls from Python: `add_tool_result` and `approve_tool_call`.

Without a server, the call that completes a batch runs the continuation itself; the reply is a
new assistant message, and an approved server tool runs at its start.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from think import Think, tool
from think.messages import ToolPart
from think.models.base import ModelRequest, TextContent, ToolMessage, UserMessage
from think.runtime import EmbeddedRuntime
from think.testing.models import Reply, ScriptedModel, call
from think.tools.tool import client_tool

RAN: list[str] = []


@tool(needs_approval=True)
def deploy(target: str) -> str:
    """Deploy.

    Args:
        target: Where to.
    """
    RAN.append(target)
    return f"deployed to {target}"


def script(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        outputs = [r.output if isinstance(r.output, str) else orjson.dumps(r.output).decode() for r in last.results]
        return "Done: " + "; ".join(outputs)
    said = "".join(c.text for m in request.messages if isinstance(m, UserMessage)
                   for c in m.content if isinstance(c, TextContent))
    if "two" in said:
        return [call("get_location", id="c1"), call("get_time", id="c2")]
    if "deploy" in said:
        return call("deploy", id="d1", target="prod")
    return call("get_location", id="c1")


class Answering(Think):
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script)

    def get_tools(self) -> list[object]:
        return [deploy, client_tool("get_location"), client_tool("get_time")]


def part(agent: Think, call_id: str) -> ToolPart:
    return next(p for m in agent.messages for p in m.parts if isinstance(p, ToolPart) and p.tool_call_id == call_id)


async def test_a_client_tool_result_continues_the_turn(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Answering, "one")
    first = await agent.save_messages(["where am I?"])
    assert first.status == "completed" and part(agent, "c1").state == "input-available"
    answer = await agent.add_tool_result("c1", {"city": "Lisbon"}, auto_continue=True)
    assert answer.message is not None and part(agent, "c1").state == "output-available"
    assert answer.continuation is not None and answer.continuation.status == "completed"
    assert answer.continuation.continuation is True
    assert [m.role for m in agent.messages] == ["user", "assistant", "assistant"]
    assert agent.messages[-1].text == 'Done: {"city":"Lisbon"}'
    assert (await agent.add_tool_result("c1", "again")).message is None  # settled: nothing changes
    assert (await agent.add_tool_result("nope", 1)).message is None
    await runtime.close()


async def test_a_batch_continues_once_every_call_is_answered(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Answering, "batch")
    await agent.save_messages(["two things"])
    first = await agent.add_tool_result("c1", "Lisbon", auto_continue=True)
    assert first.message is not None and first.continuation is None  # c2 still waits
    assert len(agent.messages) == 2
    second = await agent.add_tool_result("c2", error="the clock is broken", auto_continue=True)
    assert second.continuation is not None and second.continuation.status == "completed"
    assert part(agent, "c2").state == "output-error" and part(agent, "c2").error_text == "the clock is broken"
    assert agent.messages[-1].text == "Done: Lisbon; the clock is broken"
    await runtime.close()


async def test_an_approved_call_runs_first_in_the_continuation(tmp_path: Path) -> None:
    RAN.clear()
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Answering, "approve")
    await agent.save_messages(["deploy it"])
    assert part(agent, "d1").state == "approval-requested" and RAN == []
    answer = await agent.approve_tool_call("d1", True, auto_continue=True)
    assert RAN == ["prod"]
    assert answer.continuation is not None and answer.continuation.status == "completed"
    approved = part(agent, "d1")  # the output went into the message that made the call
    assert approved.state == "output-available" and approved.output == "deployed to prod"
    assert approved.approval is not None and approved.approval.approved is True
    assert agent.messages[-1].text == "Done: deployed to prod"
    await runtime.close()


async def test_a_denied_call_is_never_run_and_the_model_is_told(tmp_path: Path) -> None:
    RAN.clear()
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Answering, "deny")
    await agent.save_messages(["deploy it"])
    answer = await agent.approve_tool_call("d1", False, "not on a Friday", auto_continue=True)
    assert RAN == [] and answer.continuation is not None
    denied = part(agent, "d1")
    assert denied.state == "output-denied" and denied.approval is not None
    assert (denied.approval.approved, denied.approval.reason) == (False, "not on a Friday")
    assert agent.messages[-1].text.startswith("Done: The user denied this tool call")
    await runtime.close()


async def test_an_answer_continues_the_turn_by_default_as_the_js_clients_do(tmp_path: Path) -> None:
    RAN.clear()
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Answering, "default")
    await agent.save_messages(["where am I?"])
    answer = await agent.add_tool_result("c1", "Lisbon")
    assert answer.continuation is not None and answer.continuation.status == "completed"
    assert agent.messages[-1].text == "Done: Lisbon"
    other = await runtime.get(Answering, "default-approval")
    await other.save_messages(["deploy it"])
    approved = await other.approve_tool_call("d1", True)
    assert approved.continuation is not None and RAN == ["prod"]
    assert other.messages[-1].text == "Done: deployed to prod"
    await runtime.close()


async def test_with_auto_continue_false_nothing_runs_until_asked(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Answering, "manual")
    await agent.save_messages(["where am I?"])
    answer = await agent.add_tool_result("c1", "Lisbon", auto_continue=False)
    assert answer.message is not None and answer.continuation is None and len(agent.messages) == 2
    result = await agent.continue_last_turn()
    assert result.status == "completed" and agent.messages[-1].text == "Done: Lisbon"
    await runtime.close()
