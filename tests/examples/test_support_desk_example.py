"""The support-desk example: refunds and escalations run only after a person approves them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import anyio

from tests.chat.live_server import serve_in_thread
from tests.submissions.server_process import think_serve_process
from think import create_app, open_agent
from think.client import AgentClient
from think.messages import Message, ToolPart
from think.protocol.frames import ToolApproval

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "support_desk.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_support_desk", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def calls(messages: list, name: str) -> list[ToolPart]:  # type: ignore[type-arg]
    return [p for m in messages for p in m.parts if isinstance(p, ToolPart) and p.name == name]


async def test_a_refund_waits_for_approval_survives_a_restart_and_runs_once_approved(data_dir: Path) -> None:
    module = load()
    async with open_agent(module.OfflineSupportDesk, "desk", data_dir=data_dir) as agent:
        result = await agent.save_messages("Ticket T-1001 was charged twice: refund the duplicate.")
        assert result.status == "completed"
        waiting = module.pending_call(agent)
        assert (waiting.name, waiting.input["amount"]) == ("refund", 42.0)
        ticket = json.loads(await agent.workspace.read_file("/tickets/T-1001.json") or "")
        assert ticket["status"] == "open"  # nothing ran before the approval

    async with open_agent(module.OfflineSupportDesk, "desk", data_dir=data_dir) as agent:  # opened again from disk
        assert module.pending_call(agent).tool_call_id == waiting.tool_call_id
        answer = await agent.approve_tool_call(waiting.tool_call_id, True)
        assert answer.continuation is not None and answer.continuation.status == "completed"
        [refund] = calls(agent.messages, "refund")
        assert (refund.state, refund.output) == ("output-available", "Refunded 42.00 to ada@example.com on T-1001.")
        assert agent.messages[-1].text == "Refunded 42.00 to ada@example.com on T-1001."
        ticket = json.loads(await agent.workspace.read_file("/tickets/T-1001.json") or "")
        assert (ticket["status"], ticket["refunded"]) == ("refunded", 42.0)


async def test_a_denied_escalation_never_runs_and_the_model_notes_why(data_dir: Path) -> None:
    module = load()
    async with open_agent(module.OfflineSupportDesk, "desk", data_dir=data_dir) as agent:
        await agent.save_messages("Escalate T-1002 to logistics, the parcel is two weeks late.")
        waiting = module.pending_call(agent)
        assert waiting.name == "escalate"
        await agent.approve_tool_call(waiting.tool_call_id, False, "Late parcels stay with the desk")
        [escalate] = calls(agent.messages, "escalate")
        assert escalate.state == "output-denied"
        [note] = calls(agent.messages, "add_note")
        assert note.state == "output-available"
        ticket = json.loads(await agent.workspace.read_file("/tickets/T-1002.json") or "")
        assert ticket["status"] == "open"
        assert ticket["notes"] == ["escalate: The user denied this tool call (execution-denied). "
                                   "Reason: Late parcels stay with the desk"]
        assert agent.messages[-1].text.startswith("That was not approved")


async def test_the_approval_comes_from_a_client_over_the_websocket(tmp_path: Path) -> None:
    """What the web UI's Approve button does: a `cf_agent_tool_approval` frame on the socket."""
    module = load()
    app = create_app([module.OfflineSupportDesk], data_dir=tmp_path / "served")
    with serve_in_thread(app) as server:
        url = server.agent_url("offline-support-desk", "web")
        async with AgentClient.connect(url, turn_timeout=20, wait_timeout=5) as client:
            await (await client.send_chat("Ticket T-1001 was charged twice: refund the duplicate."))
            [waiting] = [p for p in client.messages[-1].tool_parts if p.state == "approval-requested"]
            await client.send(ToolApproval(tool_call_id=waiting.tool_call_id, approved=True, auto_continue=True))
            await client.wait_until(lambda c: c.messages[-1].text.startswith("Refunded"))
            assert client.messages[-1].text == "Refunded 42.00 to ada@example.com on T-1001."
            files = await client.call("read_workspace_file", "/tickets/T-1001.json")
            assert json.loads(files["content"])["status"] == "refunded"


def test_a_pending_refund_survives_a_killed_server_and_runs_once_approved(tmp_path: Path) -> None:
    """`kill -9` while the refund waits for approval: the restarted server still has the waiting call,
    and the approval runs the refund exactly once."""
    target = [f"{EXAMPLE}:OfflineSupportDesk"]
    env = {"THINK_DATA_DIR": str(tmp_path / "served")}
    with think_serve_process(target, env, ready_path="/_think/health") as server:
        async def ask() -> str:
            async with AgentClient.connect(f"{server.ws}/agents/offline-support-desk/kill", turn_timeout=20,
                                           wait_timeout=10) as client:
                await (await client.send_chat("Ticket T-1001 was charged twice: refund the duplicate."))
                [waiting] = [p for p in client.messages[-1].tool_parts if p.state == "approval-requested"]
                return waiting.tool_call_id

        call_id = anyio.run(ask)
        server.kill()

    with think_serve_process(target, env, ready_path="/_think/health") as server:
        async def approve() -> list[Message]:
            async with AgentClient.connect(f"{server.ws}/agents/offline-support-desk/kill", turn_timeout=20,
                                           wait_timeout=10) as client:
                [waiting] = [p for p in client.messages[-1].tool_parts if p.state == "approval-requested"]
                assert waiting.tool_call_id == call_id
                await client.send(ToolApproval(tool_call_id=call_id, approved=True, auto_continue=True))
                await client.wait_until(lambda c: c.messages[-1].text.startswith("Refunded"))
                ticket = json.loads((await client.call("read_workspace_file", "/tickets/T-1001.json"))["content"])
                assert ticket["notes"] == ["Refunded 42.00: a duplicate charge"]  # once
                return await client.get_messages()

        transcript = anyio.run(approve)
    assert [p.state for m in transcript for p in m.tool_parts] == ["output-available", "output-available"]
