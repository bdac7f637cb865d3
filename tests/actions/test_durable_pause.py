"""Durable-pause actions over a real server: parked by one connection, listed and approved from
another an hour later, once; rejected; expired; bad ids are clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.actions.agents import CodeShop, Shop, effects
from tests.actions.test_ledger import outputs
from tests.chat.live_server import Connect
from think import Think
from think.messages import Message
from think.runtime import open_agent
from think.testing.models import ScriptedModel, call

HOUR = 3600.0


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


async def test_approved_from_a_second_connection_an_hour_later_it_runs_once(shop_connect: Connect) -> None:
    Shop.model = ScriptedModel([call("send_email", to="ada@example.com", subject="Q3"),
                                "I asked for approval; it will go out once approved.", "The email went out."])
    async with shop_connect("mail") as first:
        await (await first.send_chat("email ada the report"))
        [part] = [p for p in first.messages[-1].tool_parts]
        paused = part.output
        assert paused["status"] == "paused" and paused["descriptor"]["kind"] == "durable-pause"
        assert "it will go out once approved" in first.messages[-1].text
    assert effects() == []

    Shop.clock_offset = HOUR
    async with shop_connect("mail") as second:  # another device, an hour later; the first is gone
        [pending] = await second.call("pending_approvals")
        assert pending == {"execution_id": paused["execution_id"], "source": "action",
                           "descriptor": paused["descriptor"], "created_at": pending["created_at"]}
        assert pending["descriptor"] | {"requestId": "-"} == {
            "requestId": "-", "toolCallId": part.tool_call_id, "action": "send_email",
            "summary": "Send the email draft", "input": {"to": "ada@example.com", "subject": "Q3"},
            "permissions": ["mail:send"], "risk": "medium",
            "kind": "durable-pause", "executionId": paused["execution_id"]}
        result = await second.call("approve_execution", paused["execution_id"])
        assert result["status"] == "completed" and result["output"] == {"sent": True, "to": "ada@example.com"}
        await second.wait_until(lambda c: bool(c.messages) and c.messages[-1].text == "The email went out.")
        again = await second.call("approve_execution", paused["execution_id"])
        assert again["status"] == "error" and "already settled" in again["error"]
        assert await second.call("pending_approvals") == []
        history = await second.get_messages()
    assert effects() == ["email:ada@example.com"]
    # the paused output is replaced by the outcome, and the note about waiting is gone
    assert outputs(history, "send_email") == [{"sent": True, "to": "ada@example.com"}]
    assert "once approved" not in " ".join(texts(history))
    assert texts(history)[-1] == "The email went out."


async def test_reject_and_then_approve_is_an_error_and_nothing_runs(shop_connect: Connect) -> None:
    Shop.model = ScriptedModel([call("send_email", to="bob@example.com", subject="x"), "Waiting.", "Not sent."])
    async with shop_connect("reject") as client:
        await (await client.send_chat("email bob"))
        execution_id = client.messages[-1].tool_parts[0].output["execution_id"]
        rejected = await client.call("reject_execution", execution_id, "wrong person")
        assert rejected["status"] == "rejected" and rejected["output"]["error"]["name"] == "ActionRejectedError"
        assert "wrong person" in rejected["output"]["error"]["message"]
        late = await client.call("approve_execution", execution_id)
        assert late["status"] == "error" and "already rejected" in late["error"]
        twice = await client.call("reject_execution", execution_id)
        assert twice["status"] == "error"
        await client.wait_until(lambda c: c.messages[-1].text == "Not sent.")
    assert effects() == []


async def test_a_parked_action_expires_after_its_ttl(data_dir: Path) -> None:
    Shop.model = ScriptedModel([call("send_email", to="ada@example.com", subject="x"), "Waiting."])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["email"])
        [pending] = agent.pending_approvals()
        Shop.clock_offset = agent.action_pending_approval_ttl + 1
        late = await agent.approve_execution(pending["execution_id"])
        assert late["status"] == "error" and "expired" in late["error"]
        assert agent.pending_approvals() == [] and effects() == []


async def test_actions_and_code_executions_share_one_approvals_list(data_dir: Path) -> None:
    CodeShop.model = ScriptedModel([
        [call("send_email", id="act1", to="ada@example.com", subject="a"),
         call("execute", id="ex1", code='tools.send_email(to="bob@example.com", body="b")')], "Both wait."])
    async with open_agent(CodeShop, "c", data_dir=data_dir) as agent:
        await agent.save_messages(["both"])
        listed = agent.pending_approvals()
        assert sorted(i["source"] for i in listed) == ["action", "codemode"]
        code = next(i for i in listed if i["source"] == "codemode")
        assert code["descriptor"]["action"] == "tools.send_email" and code["descriptor"]["toolCallId"] == "ex1"
        assert agent.pending_approvals(code["execution_id"]) == [code]
        done = await agent.approve_execution(code["execution_id"])
        assert done["status"] == "completed"  # the execute runtime resolved its own id
        assert [i["source"] for i in agent.pending_approvals()] == ["action"]


@pytest.mark.parametrize(("method", "args", "error"), [
    ("approve_execution", ["act_nope"], "no paused execution 'act_nope' (unknown id"),
    ("reject_execution", ["act_nope"], "no paused execution 'act_nope' (unknown id"),
    ("approve_execution", [""], "execution_id must be a non-empty string"),
    ("approve_execution", [42], "execution_id must be a non-empty string"),
    ("reject_execution", ["act_nope", {"not": "text"}], "reason must be a string"),
])
async def test_bad_ids_are_clear_errors(shop_connect: Connect, method: str, args: list[Any], error: str) -> None:
    async with shop_connect("bad") as client:
        answer = await client.call(method, *args)
        assert answer["status"] == "error" and answer["ok"] is False
        assert error in answer["error"]


async def test_an_approval_gated_call_is_not_approved_through_approve_execution(data_dir: Path) -> None:
    Shop.model = ScriptedModel([call("delete_account", id="del1", user="bob"), "Asked."])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["delete bob"])
        asked = agent.action_runtime.parked.for_call("del1", "approval-gated")
        assert asked is not None
        answer = await agent.approve_execution(asked.execution_id)
        assert answer["status"] == "error" and "answered in the chat" in answer["error"]
        assert agent.pending_approvals() == [] and effects() == []


async def test_durable_pause_rechecks_authorization_when_approved(data_dir: Path) -> None:
    class Revoking(Shop):
        revoked = False

        def authorize_action(self, ctx: Any) -> Any:
            if ctx.at_approval and type(self).revoked:
                return {"allowed": False, "reason": "mail is switched off"}
            return super().authorize_action(ctx)

    Revoking.model = ScriptedModel([call("send_email", to="ada@example.com", subject="x"), "Waiting.", "Not sent."])
    async with open_agent(Revoking, "r", data_dir=data_dir) as agent:
        await agent.save_messages(["email"])
        [pending] = agent.pending_approvals()
        Revoking.revoked = True
        result = await agent.approve_execution(pending["execution_id"])
        assert result["status"] == "failed" and result["output"]["error"]["name"] == "ActionAuthorizationError"
        assert "mail is switched off" in result["output"]["error"]["message"]
        assert effects() == []


async def test_two_concurrent_approvals_run_it_once_and_its_attachment_joins_the_parking_turn(
        data_dir: Path) -> None:
    import anyio

    Shop.model = ScriptedModel([call("send_email", to="ada@example.com", subject="Q3"), "Waiting.", "Sent."])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        parked = await agent.save_messages(["email"])
        [pending] = agent.pending_approvals()
        results: list[dict[str, Any]] = []

        async def approve() -> None:
            results.append(await agent.approve_execution(pending["execution_id"]))

        async with anyio.create_task_group() as group:
            group.start_soon(approve)
            group.start_soon(approve)
        assert sorted(str(r["status"]) for r in results) == ["completed", "error"]
        assert effects() == ["email:ada@example.com"]
        assert agent.reply_attachments(parked.request_id) == [
            {"type": "email_draft", "to": ["ada@example.com"], "subject": "Q3"}]


async def test_an_approval_gated_action_in_code_mode_pauses_the_code_and_runs_once_approved(data_dir: Path) -> None:
    from tests.actions.agents import delete_account
    from think.actions.compile import compile_action
    from think.tools.execute import create_execute_tool

    class Coding(Think):  # the default authorize_turn: a call from code mode (no turn) has the full grant
        workspace_bash = False
        model = ScriptedModel([call("execute", code='tools.delete_account(user="bob")'), "Waiting.", "Done."])

        def get_model(self) -> ScriptedModel:
            return self.model

        def get_tools(self) -> list[Any]:
            return [create_execute_tool(self, tools=[compile_action(delete_account, self)], timeout=5)]

    async with open_agent(Coding, "c", data_dir=data_dir) as agent:
        await agent.save_messages(["delete bob"])
        [pending] = agent.pending_approvals()
        assert pending["source"] == "codemode" and effects() == []
        done = await agent.approve_execution(pending["execution_id"])
        assert done["status"] == "completed" and done["value"] == {"deleted": "bob"}, done
        assert effects() == ["delete:bob"]
