"""Client tool results and approvals over the socket, and the continuation turns they start.

The frames are compared with what the current TypeScript server sends (wire-observations §12):
`cf_agent_message_updated` to everyone, then the probe parked with `cf_agent_stream_pending`,
then `cf_agent_stream_resuming` when the continuation streams under a server-generated id.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from tests.chat.conftest import Connect
from tests.chat.live_server import LiveServer
from think.protocol.frames import ToolApproval, ToolResult


def chat_request(request_id: str, messages: list[dict[str, Any]], **body: Any) -> str:
    payload = json.dumps({"messages": messages, "trigger": "submit-message", **body})
    return json.dumps({"type": "cf_agent_use_chat_request", "id": request_id, "init": {"method": "POST",
                                                                                       "body": payload}})


async def recv(ws: ClientConnection) -> dict[str, Any]:
    with anyio.fail_after(5):
        return dict(json.loads(await ws.recv()))


async def recv_until(ws: ClientConnection, done: Any) -> list[dict[str, Any]]:
    frames = [await recv(ws)]
    while not done(frames[-1]):
        frames.append(await recv(ws))
    return frames


async def open_tab(server: LiveServer, name: str, tab: str) -> ClientConnection:
    ws = await ws_connect(f"{server.agent_url('tool-chat', name)}?_pk={tab}", max_queue=None)
    await ws.send(json.dumps({"type": "cf_agent_stream_resume_request", "probeId": f"{tab}-p0"}))
    await recv_until(ws, lambda f: f.get("probeId") == f"{tab}-p0")
    return ws


def user(text: str, message_id: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


async def test_a_client_tool_result_continues_under_a_server_request_id(tool_server: LiveServer,
                                                                        tool_connect: Connect) -> None:
    async with tool_connect("cont") as control:
        await control.call("hold_continuations")
        ws = await open_tab(tool_server, "cont", "tab-a")
        await ws.send(chat_request("req1", [user("locate me", "u1")]))
        first = await recv_until(ws, lambda f: f.get("done"))
        assert first[-1] == {"type": "cf_agent_use_chat_response", "id": "req1", "body": "", "done": True,
                             "outcome": "completed", "messageIds": ["u1"]}
        assistant_id = json.loads(first[0]["body"])["messageId"]
        await ws.send(json.dumps({"type": "cf_agent_tool_result", "toolCallId": "loc1", "toolName": "get_location",
                                  "output": {"city": "Lisbon"}, "autoContinue": True}))
        await ws.send(json.dumps({"type": "cf_agent_stream_resume_request", "probeId": "p2"}))
        updated, pending, resuming = await recv(ws), await recv(ws), await recv(ws)
        usage = updated["message"].pop("metadata")["usage"]  # the first turn's (think.usage)
        assert usage["steps"] and usage["model"] == "scripted"
        assert updated == {"type": "cf_agent_message_updated", "message": {
            "id": assistant_id, "role": "assistant", "parts": [
                {"type": "step-start"},
                {"type": "tool-get_location", "toolCallId": "loc1", "state": "output-available",
                 "toolName": "get_location", "input": {}, "output": {"city": "Lisbon"}, "preliminary": False}]}}
        continuation = pending["id"]
        assert pending == {"type": "cf_agent_stream_pending", "id": continuation, "probeId": "p2"}
        assert resuming == {"type": "cf_agent_stream_resuming", "id": continuation}
        assert continuation not in ("req1", assistant_id) and len(continuation) == 36  # a server UUID
        await ws.send(json.dumps({"type": "cf_agent_stream_resume_ack", "id": continuation}))
        replay = await recv_until(ws, lambda f: f.get("replayComplete"))
        assert [(json.loads(f["body"])["type"] if f["body"] else "complete", f.get("seq")) for f in replay] == [
            ("start", 0), ("start-step", 1), ("text-start", 2), ("text-delta", 3), ("text-delta", 4),
            ("text-delta", 5), ("complete", None)]
        assert json.loads(replay[0]["body"]) == {"type": "start"}  # no messageId: it continues the bubble
        assert all(f["replay"] for f in replay)
        await control.call("open_gate")
        live = await recv_until(ws, lambda f: f.get("done"))
        assert [f.get("seq") for f in live if f["type"] == "cf_agent_use_chat_response" and f["body"]] == \
            [6, 7, 8, 9, 10]
        assert all(f.get("continuation") for f in live if f["type"] == "cf_agent_use_chat_response")
        assert live[-2]["type"] == "cf_agent_chat_messages"
        assert live[-1] == {"type": "cf_agent_use_chat_response", "id": continuation, "body": "", "done": True,
                            "outcome": "completed", "continuation": True}
        roles = [(m["role"], m["id"]) for m in live[-2]["messages"]]
        assert roles[:2] == [("user", "u1"), ("assistant", assistant_id)] and roles[2][0] == "assistant"
        await ws.close()


async def test_a_parallel_batch_continues_once_when_every_result_is_in(tool_connect: Connect) -> None:
    async with tool_connect("batch") as client, tool_connect("batch") as other:
        turn = await (await client.send_chat("both please"))
        assert turn.outcome == "completed"
        await client.send(ToolResult(tool_call_id="loc1", tool_name="get_location", output="Lisbon",
                                     auto_continue=True))
        await other.wait_until(lambda c: any(p.state == "output-available" for m in c.messages
                                             for p in m.tool_parts))
        assert len(client.turns) == 1  # the batch is not complete: nothing continues
        await client.send(ToolResult(tool_call_id="time1", tool_name="get_time", output="noon", auto_continue=True))
        await client.wait_until(lambda c: c.message_count == 3)
        assert client.messages[-1].text == "Done: Lisbon; noon"
        continuations = [t for t in client.turns.values() if t.continuation]
        assert len(continuations) == 1 and (await continuations[0]).outcome == "completed"
        assert [m.text for m in await client.get_messages()][-1] == "Done: Lisbon; noon"


async def test_an_approval_runs_the_tool_and_a_denial_reaches_the_model(tool_connect: Connect) -> None:
    async with tool_connect("approvals") as client:
        await (await client.send_chat("notify them"))
        [call_part] = client.messages[-1].tool_parts
        assert call_part.state == "approval-requested" and call_part.approval is not None
        approval_id = call_part.approval.id
        await client.send(ToolApproval(tool_call_id="n1", approved=True, auto_continue=True))
        await client.wait_until(lambda c: c.message_count == 3 and c.messages[-1].text.startswith("Done"))
        stored = (await client.get_messages())[1].tool_parts[0]
        assert stored.state == "output-available" and stored.output == "Sent: hello"
        assert stored.approval is not None and (stored.approval.id, stored.approval.approved) == (approval_id, True)
        assert client.messages[-1].text == "Done: Sent: hello"

        await (await client.send_chat("notify again"))
        await client.send(ToolApproval(tool_call_id="n1", approved=False, auto_continue=True))
        await client.wait_until(lambda c: c.message_count == 6)
        denied = client.messages[-2].tool_parts[0]
        assert denied.state == "output-denied" and denied.approval is not None and denied.approval.approved is False
        assert client.messages[-1].text.startswith("Done: The user denied this tool call")


async def test_answers_for_unknown_calls_are_refused_and_change_nothing(tool_connect: Connect) -> None:
    async with tool_connect("stale") as client:
        await (await client.send_chat("hello"))
        before = [m.to_json() for m in await client.get_messages()]
        await client.send(ToolResult(tool_call_id="nope", output=1, auto_continue=True))
        await client.send(ToolApproval(tool_call_id="nope", approved=True, auto_continue=True))
        assert (await client.call("open_gate")) is None  # a round trip: both frames were handled
        assert [m.to_json() for m in await client.get_messages()] == before
        assert len(client.turns) == 1
        assert client.errors == ["tool result refused: no tool call 'nope' waits for a result",
                                 "tool approval refused: no tool call 'nope' waits for approval"]


async def test_client_tools_and_the_last_body_are_kept_for_continuations(tool_server: LiveServer,
                                                                         tool_connect: Connect) -> None:
    browser_tool = {"name": "getBrowserInfo", "description": "Browser details",
                    "parameters": {"type": "object", "properties": {}}}
    ws = await open_tab(tool_server, "tools", "tab-a")
    await ws.send(chat_request("r1", [user("browser please", "u1")], clientTools=[browser_tool], tz="Europe/Lisbon"))
    frames = await recv_until(ws, lambda f: f.get("done"))
    assert '"toolName":"getBrowserInfo"' in "".join(f.get("body", "") for f in frames)
    async with tool_connect("tools") as client:
        assert client.messages[-1].tool_parts[0].state == "input-available"
        # The continuation runs with the tools and body the last request stored (here, the
        # result comes from another tab, without clientTools of its own).
        await client.send(ToolResult(tool_call_id="b1", tool_name="getBrowserInfo", output={"ua": "test"},
                                     auto_continue=True))
        await client.wait_until(lambda c: c.message_count == 3)
        assert client.messages[-1].text == 'Done: {"ua":"test"}'
    await ws.close()
