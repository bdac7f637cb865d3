"""A call to a `needs_approval` tool pauses the execution durably; approve / reject resolve it once."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.tools.execute.agents import SIDE_EFFECTS, Coder
from tests.tools.execute.test_execute import execute_parts
from think import open_agent
from think.testing.models import ScriptedModel, call

MAIL = """
w = tools.get_weather(city="Oslo")
print("weather first")
r = tools.send_email(to="ada@example.com", body=f"{w['temp']} degrees")
print("mailed")
{"weather": w["temp"], "mail": r}
"""


async def test_approve_resumes_the_code_and_a_continuation_gives_the_model_the_result(data_dir: Path) -> None:
    SIDE_EFFECTS.clear()
    Coder.model = ScriptedModel([call("execute", code=MAIL), "Waiting for your approval.", "The mail went out."])
    async with open_agent(Coder, "a", data_dir=data_dir) as agent:
        result = await agent.save_messages(["Mail Ada the weather"])
        assert result.status == "completed"
        [part] = execute_parts(agent.messages)
        paused = part.output
        assert paused["status"] == "paused" and paused["ok"] is False
        assert paused["pending"]["tool"] == "tools.send_email"
        assert paused["pending"]["input"] == {"to": "ada@example.com", "body": "12 degrees"}
        assert SIDE_EFFECTS == ["weather:Oslo"] and paused["host_calls"] == 1
        [pending] = agent.pending_executions()
        assert pending["execution_id"] == paused["execution_id"]
        assert pending["pending"]["description"] == "Send an email."

        approved = await agent.approve_execution(paused["execution_id"])
        assert approved["status"] == "completed", approved
        assert approved["value"] == {"weather": 12, "mail": "sent to ada@example.com"}
        assert approved["stdout"] == "mailed\n" and approved["host_calls"] == 2
        assert SIDE_EFFECTS == ["weather:Oslo", "email:ada@example.com"]
        # the outcome replaced the paused result, and a continuation (no connection) told the model
        [part] = execute_parts(agent.messages)
        assert part.output == approved
        assert agent.messages[-1].parts[-1].text == "The mail went out."  # type: ignore[union-attr]
        assert "sent to ada@example.com" in str(Coder.model.requests[-1].messages)
        assert agent.pending_executions() == []

        again = await agent.approve_execution(paused["execution_id"])
        assert again["status"] == "error" and "already completed" in again["error"]
        assert SIDE_EFFECTS.count("email:ada@example.com") == 1  # never a second run
        [run] = agent.executions(limit=1)
        assert [e["method"] for e in run["journal"]] == ["get_weather", "send_email"]


async def test_reject_ends_the_execution_and_approve_after_reject_is_an_error(data_dir: Path) -> None:
    SIDE_EFFECTS.clear()
    Coder.model = ScriptedModel([call("execute", code=MAIL), "Waiting.", "Understood, no mail."])
    async with open_agent(Coder, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["Mail Ada"])
        [part] = execute_parts(agent.messages)
        execution_id = part.output["execution_id"]
        rejected = await agent.reject_execution(execution_id, reason="not today")
        assert rejected["status"] == "rejected" and rejected["ok"] is False
        assert rejected["error"] == "PermissionError: the call tools.send_email was rejected: not today"
        assert agent.messages[-1].parts[-1].text == "Understood, no mail."  # type: ignore[union-attr]
        late = await agent.approve_execution(execution_id)
        assert late["status"] == "error" and "already rejected" in late["error"]
        assert (await agent.reject_execution(execution_id))["status"] == "error"
        assert SIDE_EFFECTS == ["weather:Oslo"]
        unknown = await agent.approve_execution("exec_nope")
        assert unknown["status"] == "error" and "unknown" in unknown["error"]


async def test_expire_paused_reclaims_old_pauses(data_dir: Path) -> None:
    Coder.model = ScriptedModel([call("execute", code=MAIL), "Waiting."])
    async with open_agent(Coder, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["Mail Ada"])
        [pending] = agent.pending_executions()
        assert agent.expire_paused(older_than=3600) == []
        assert agent.expire_paused(older_than=0) == [pending["execution_id"]]
        assert agent.pending_executions() == []
        late = await agent.approve_execution(pending["execution_id"])
        assert "already expired" in late["error"]


async def test_two_concurrent_approvals_run_the_call_once(data_dir: Path) -> None:
    SIDE_EFFECTS.clear()
    Coder.model = ScriptedModel([call("execute", code=MAIL), "Waiting.", "Sent."])
    async with open_agent(Coder, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["Mail Ada"])
        [pending] = agent.pending_executions()
        results: list[dict[str, object]] = []

        async def approve() -> None:
            results.append(await agent.approve_execution(pending["execution_id"]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(approve)
            tg.start_soon(approve)
        assert sorted(str(r["status"]) for r in results) == ["completed", "error"]
        assert SIDE_EFFECTS.count("email:ada@example.com") == 1
