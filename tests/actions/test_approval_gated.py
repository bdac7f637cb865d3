"""Approval-gated actions: the stream asks with a descriptor; what runs is what was approved, and
only while it is still authorized."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import orjson

from tests.actions.agents import Shop, effects
from tests.actions.test_ledger import outputs
from tests.chat.live_server import Connect
from think import Allow
from think.messages import Message, ToolPart
from think.protocol.frames import ChatResponse, ServerFrame, ToolApproval
from think.runtime import open_agent
from think.testing.models import ScriptedModel, call

DESCRIPTOR = {"action": "delete_account", "summary": "Delete an account", "input": {"user": "bob"},
              "permissions": ["admin"], "risk": "high", "kind": "approval-gated"}


def gated_part(agent: Shop) -> ToolPart:
    [part] = [p for m in agent.messages for p in m.tool_parts if p.name == "delete_account"]
    return part


async def test_the_approval_request_carries_a_descriptor_and_the_approved_call_runs(data_dir: Path) -> None:
    Shop.model = ScriptedModel([call("delete_account", id="del1", user="bob"), "Deleted bob."])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        result = await agent.save_messages(["delete bob"])
        part = gated_part(agent)
        assert part.state == "approval-requested" and part.approval is not None
        descriptor = part.approval.model_extra["descriptor"]  # type: ignore[index]
        assert descriptor == {**DESCRIPTOR, "requestId": result.request_id, "toolCallId": "del1"}
        assert effects() == []

        answer = await agent.approve_tool_call("del1", True)
        assert answer.continuation is not None and answer.continuation.status == "completed"
        assert effects() == ["delete:bob"]
        part = gated_part(agent)
        assert part.state == "output-available" and part.output == {"deleted": "bob"}
        assert part.approval is not None and part.approval.model_extra["descriptor"] == descriptor  # type: ignore[index]
        assert agent.messages[-1].parts[-1].text == "Deleted bob."  # type: ignore[union-attr]


async def test_a_rejected_call_does_not_run(data_dir: Path) -> None:
    Shop.model = ScriptedModel([call("delete_account", id="del1", user="bob"), "Not deleted."])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["delete bob"])
        await agent.approve_tool_call("del1", False)
        assert gated_part(agent).state == "output-denied"
        assert effects() == []


class Rewriter(Shop):
    """A `before_tool_call` that changes the input of the approved call."""

    rewrite: ClassVar[bool] = True

    async def before_tool_call(self, ctx: Any) -> Any:
        if ctx.tool_name == "delete_account" and type(self).rewrite:
            return Allow(input={"user": "alice"})
        return None


async def test_an_input_changed_after_the_approval_is_refused(data_dir: Path) -> None:
    Rewriter.model = ScriptedModel([call("delete_account", id="del1", user="bob"), "It was refused."])
    async with open_agent(Rewriter, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["delete bob"])
        await agent.approve_tool_call("del1", True)
        [out] = outputs(agent.messages, "delete_account")
        assert out["error"]["name"] == "ActionApprovalError"
        assert out["error"]["approved_input"] == {"user": "bob"}
        assert effects() == []  # neither bob nor alice


async def test_authorization_withdrawn_before_the_approval_stops_the_call(data_dir: Path) -> None:
    Shop.granted = ["admin"]
    Shop.model = ScriptedModel([call("delete_account", id="del1", user="bob"), "Not allowed any more."])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["delete bob"])
        assert gated_part(agent).state == "approval-requested"
        Shop.granted = []  # the grant is gone when the person approves
        await agent.approve_tool_call("del1", True)
        [out] = outputs(agent.messages, "delete_account")
        assert out["error"]["name"] == "ActionAuthorizationError"
        assert "missing permission(s): admin" in out["error"]["message"]
        assert effects() == []


async def test_a_call_the_turn_may_not_make_is_denied_before_anyone_is_asked(data_dir: Path) -> None:
    Shop.granted = ["billing:charge"]
    Shop.model = ScriptedModel([call("delete_account", id="del1", user="bob"), "I may not."])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["delete bob"])
        part = gated_part(agent)
        assert part.state == "output-available" and part.approval is None
        assert part.output["error"]["name"] == "ActionAuthorizationError"
        assert agent.pending_approvals() == []
        assert effects() == []


async def test_over_the_socket_the_descriptor_streams_a_tampered_transcript_changes_nothing_and_approval_runs(
        shop_connect: Connect) -> None:
    Shop.model = ScriptedModel([call("delete_account", id="del1", user="bob"), "Asked.", "Deleted bob."])
    frames: list[ServerFrame] = []
    async with shop_connect("gated", on_frame=frames.append) as client:
        await (await client.send_chat("delete bob"))
        [request] = [chunk for f in frames if isinstance(f, ChatResponse) and f.body
                     and (chunk := orjson.loads(f.body))["type"] == "tool-approval-request"]
        assert request["approvalDescriptor"] | {"requestId": "-"} == {**DESCRIPTOR, "requestId": "-",
                                                                     "toolCallId": "del1"}
        # a client that rewrites the asked-about input (and claims it approved) in its transcript
        tampered = [m.to_json() for m in client.messages]
        part = next(p for p in tampered[-1]["parts"] if p.get("toolCallId") == "del1")
        part.update(input={"user": "alice"}, state="approval-responded",
                    approval={**part["approval"], "approved": True})
        tampered.append({"id": "u2", "role": "user", "parts": [{"type": "text", "text": "go on"}]})
        await (await client.send_chat([Message.from_json(m) for m in tampered]))
        stored = next(p for m in await client.get_messages() for p in m.tool_parts if p.tool_call_id == "del1")
        assert stored.input == {"user": "bob"} and effects() == []  # the server's copy stands

    Shop.model = ScriptedModel([call("delete_account", id="del2", user="carol"), "Deleted carol."])
    async with shop_connect("gated-2") as client:
        await (await client.send_chat("delete carol"))
        await client.send(ToolApproval(tool_call_id="del2", approved=True, auto_continue=True))
        await client.wait_until(lambda c: c.messages[-1].text == "Deleted carol.")
        done = next(p for m in await client.get_messages() for p in m.tool_parts if p.tool_call_id == "del2")
        assert done.state == "output-available" and done.output == {"deleted": "carol"}
    assert effects() == ["delete:carol"]


class Malformed(Shop):
    answer: ClassVar[Any] = "yes please"

    def authorize_turn(self, ctx: Any) -> Any:
        return type(self).answer


async def test_malformed_policy_answers_are_clear_errors(data_dir: Path) -> None:
    from think import action

    bad_permissions = action(name="bad_permissions", description="x", input_schema={"type": "object"},
                             execute=lambda input, ctx: "ran", permissions=lambda input, ctx: "admin")
    bad_key = action(name="bad_key", description="x", input_schema={"type": "object"},
                     execute=lambda input, ctx: "ran", idempotency_key=lambda input, ctx: 42)

    class Bad(Shop):
        def get_actions(self) -> list[Any]:
            return [bad_permissions, bad_key]

    Bad.model = ScriptedModel([[call("bad_permissions"), call("bad_key")], "ok"])
    async with open_agent(Bad, "b", data_dir=data_dir) as agent:
        await agent.save_messages(["go"])
        errors = {p.name: p.error_text for p in agent.messages[-1].tool_parts}
        assert errors == {
            "bad_permissions": "TypeError: action 'bad_permissions': permissions is a list of strings, got 'admin'",
            "bad_key": "TypeError: action 'bad_key': idempotency_key must give a string, got 42"}

    Malformed.model = ScriptedModel([call("note", text="x"), "ok"])
    async with open_agent(Malformed, "m", data_dir=data_dir) as malformed:
        result = await malformed.save_messages(["go"])
        assert result.status == "error"
        assert result.error is not None and "authorize_turn returned 'yes please'" in result.error
        assert effects() == []
