"""Bad input never crashes anything: the sender gets an error frame (or is closed with a reason),
the other tabs and the saved conversation are not affected.

What the server does, by kind of input:
* not JSON, no `type`, an unknown type, a known type with wrong fields, a binary frame:
  `{"type":"cf_agent_protocol_error","error":…}`; after 100 of them the socket is closed (1008);
* a chat request whose id is readable but whose body is not valid: an error response for that id
  (`done:true, error:true`, the reason in `body`), so the client's request ends;
* an `rpc` frame with a readable id: an error answer for that id;
* a cancel for an unknown request: nothing;
* a frame over the size limit: the socket is closed with 1009 and a reason.
"""

from __future__ import annotations

import orjson
from websockets.exceptions import ConnectionClosed

from tests.chat.conftest import Connect
from think.client import AgentClient
from think.protocol.frames import (
    ChatRequestCancel,
    ProtocolErrorFrame,
    ServerFrame,
    StreamResumeNone,
    StreamResumeRequest,
)
from think.server.app import DEFAULT_MAX_FRAME_BYTES

GARBAGE: list[str | bytes] = [
    "not json at all",
    "",
    "[1, 2, 3]",
    '{"no": "type"}',
    '{"type": "cf_agent_something_new"}',
    '{"type": "cf_agent_chat_request_cancel", "id": 5}',
    '{"type": "cf_agent_use_chat_request", "init": {"method": "POST", "body": "{}"}}',
    '{"type": "cf_agent_state"}',
    '{"type": "cf_agent_tool_approval", "toolCallId": "c", "approved": "maybe"}',
    '{"type": "rpc", "method": "add", "args": [1, 2]}',
    b"\x00\x01binary",
]


async def _transcript(client: AgentClient) -> list[object]:
    return [m.to_json() for m in await client.get_messages()]


async def test_garbage_gets_error_frames_and_the_conversation_goes_on(connect: Connect) -> None:
    frames: list[ServerFrame] = []
    async with connect("garbage", on_frame=frames.append) as client, connect("garbage") as other:
        await (await client.send_chat("before"))
        saved = await _transcript(client)
        for text in GARBAGE:
            await client.send_text(text)
        await client.wait_until(lambda c: len(c.errors) == len(GARBAGE))
        assert all(isinstance(f, ProtocolErrorFrame) for f in frames[-len(GARBAGE):])
        assert "Not a protocol frame: the frame is not JSON" in client.errors[0]
        assert client.errors[5] == "cf_agent_chat_request_cancel: id: Input should be a valid string"
        assert client.errors[10] == "Binary frames are not supported; send JSON text"
        assert await _transcript(client) == saved
        turn = await (await client.send_chat("after"))
        assert turn.outcome == "completed"
        await other.wait_until(lambda c: c.message_count == 4)
        assert not other.errors


async def test_a_chat_request_that_cannot_be_read_is_answered_with_an_error(connect: Connect) -> None:
    async with connect("bad-request") as client, connect("bad-request") as other:
        await (await client.send_chat("hello"))
        saved = await _transcript(client)
        bad_requests = {
            "bad-json": {"method": "POST", "body": "{oops"},
            "bad-role": {"method": "POST", "body": '{"messages":[{"id":"m1","role":"robot","parts":[]}]}'},
            "bad-parts": {"method": "POST", "body": '{"messages":[{"id":"m1","role":"user","parts":7}]}'},
            "not-post": {"method": "GET", "body": "{}"},
            "bad-tool": {"method": "POST", "body": '{"messages":[],"clientTools":[{"name":"no spaces allowed"}]}'},
            "too-deep": {"method": "POST", "body": "[" * 3000},
        }
        for request_id, init in bad_requests.items():
            frame = {"type": "cf_agent_use_chat_request", "id": request_id, "init": init}
            await client.send_text(orjson.dumps(frame).decode())
        for request_id in bad_requests:
            turn = await client.turn(request_id)
            assert turn.outcome == "error" and turn.error
        errors = {request_id: client.turn(request_id).error or "" for request_id in bad_requests}
        assert "not valid JSON" in errors["bad-json"] and "not valid JSON" in errors["too-deep"]
        assert errors["bad-role"] == "messages[0].role must be one of system, user, assistant"
        assert errors["bad-parts"] == "messages[0].parts: Input should be a valid list"
        assert 'init.method must be "POST"' in errors["not-post"]
        assert "clientTools: tool name 'no spaces allowed' is not valid" in errors["bad-tool"]
        assert await _transcript(client) == saved
        assert not any(request_id in other.turns for request_id in bad_requests)  # answered to the sender only
        assert (await (await client.send_chat("still fine"))).outcome == "completed"


async def test_a_burst_of_a_thousand_frames_is_answered_in_order(connect: Connect) -> None:
    frames: list[ServerFrame] = []
    async with connect("burst", on_frame=frames.append) as client, connect("burst") as other:
        mark = len(frames)
        for i in range(500):
            await client.send(ChatRequestCancel(f"unknown-{i}"))
            await client.send(StreamResumeRequest(f"probe-{i}"))
        await client.wait_until(lambda c: len(frames) - mark == 500)
        assert frames[mark:] == [StreamResumeNone("idle", f"probe-{i}") for i in range(500)]
        calls = [await client.start_call("add", i, 1) for i in range(200)]
        assert [await call.wait() for call in calls] == [i + 1 for i in range(200)]
        turn = await (await client.send_chat("after the burst"))
        assert turn.outcome == "completed" and not client.errors
        await other.turn(turn.request_id)


async def test_a_client_that_keeps_sending_garbage_is_closed(connect: Connect) -> None:
    async with connect("flood") as flooder, connect("flood") as bystander:
        for _ in range(1000):
            if flooder.closed:
                break
            try:
                await flooder.send_text("{garbage")
            except ConnectionClosed:
                break  # the server closed the socket while we were still sending
        assert await flooder.wait_closed() == (1008, "Too many invalid frames (100)")
        assert len(flooder.errors) == 100  # each refused frame was answered, then the socket closed
        assert (await (await bystander.send_chat("unaffected"))).outcome == "completed"


async def test_an_oversized_frame_closes_the_socket_with_1009(connect: Connect) -> None:
    async with connect("big") as client, connect("big") as bystander:
        await (await client.send_chat("small"))
        big = '{"type":"cf_agent_chat_messages","messages":["' + "x" * DEFAULT_MAX_FRAME_BYTES + '"]}'
        await client.send_text(big)
        code, reason = await client.wait_closed()
        assert (code, reason) == (1009, f"Frame too large: {len(big)} bytes (limit {DEFAULT_MAX_FRAME_BYTES})")
        assert (await (await bystander.send_chat("unaffected"))).outcome == "completed"
        assert [m.text for m in await bystander.get_messages()] == ["small", "Echo: small", "unaffected",
                                                                     "Echo: unaffected"]


async def test_requests_for_a_turn_id_that_is_running_are_refused(connect: Connect) -> None:
    async with connect("dupe") as client:
        turn = await client.send_chat("gated first", request_id="same-id")
        await client.wait_until(lambda c: turn.text == "w01 w02 w03 ")
        await client.send_text(orjson.dumps({"type": "cf_agent_use_chat_request", "id": "same-id",
                                             "init": {"method": "POST", "body": "{\"messages\":[]}"}}).decode())
        await turn
        assert turn.outcome == "error" and turn.error == "A turn with request id 'same-id' is already running"
        await client.call("open_gate")


async def test_a_flood_of_chat_requests_is_capped(connect: Connect) -> None:
    async with connect("queue-flood") as client:
        first = await client.send_chat("gated, holding the queue")
        await client.wait_until(lambda c: first.text == "w01 w02 w03 ")
        flood = [await client.send_chat(f"queued {i}", request_id=f"q{i}") for i in range(70)]
        refused = flood[63:]  # 64 may wait (the running one counts)
        for turn in refused:
            await turn
        assert {t.error for t in refused} == {"Too many turns are waiting (64); send again when one has finished"}
        assert not any(t.done for t in flood[:63])
        await client.call("open_gate")
        for turn in flood[:63]:
            assert (await turn).outcome == "completed"
        assert (await first).outcome == "completed"
