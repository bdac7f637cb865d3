"""The resume handshake end to end: failed turns told again, a restart's orphan, the pre-stream
window and continuations owned by another tab (frames as the TypeScript server sends them)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import httpx
from websockets.asyncio.client import connect as ws_connect

from tests.chat.conftest import Connect
from tests.chat.live_server import LiveServer, serve_in_thread
from tests.chat.test_tool_results_and_continuations import chat_request, open_tab, recv, recv_until, user
from tests.chat.tool_agents import ToolChat
from think.messages import Message
from think.protocol.frames import ToolResult
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.stream.fanout import ChunkEvent, TurnStarted


async def test_a_failed_turn_is_told_again_on_every_reconnect_until_the_next_turn(tool_server: LiveServer) -> None:
    ws = await open_tab(tool_server, "failing", "tab-a")
    await ws.send(chat_request("bad1", [user("boom now", "u1")]))
    failed = await recv_until(ws, lambda f: f.get("done"))
    assert failed[-1]["outcome"] == "error"
    await ws.close()
    for attempt in range(2):  # a reload, then another: the failure is delivered both times
        ws = await ws_connect(tool_server.agent_url("tool-chat", "failing"), max_queue=None)
        await ws.send(json.dumps({"type": "cf_agent_stream_resume_request", "probeId": f"p{attempt}"}))
        greeting = await recv_until(ws, lambda f: "probeId" in f)
        assert greeting[0]["type"] == "cf_agent_chat_messages"  # no stream runs: the transcript comes
        assert greeting[-1] == {"type": "cf_agent_stream_resuming", "id": "bad1", "probeId": f"p{attempt}"}
        await ws.send(json.dumps({"type": "cf_agent_stream_resume_ack", "id": "bad1"}))
        replay = await recv_until(ws, lambda f: f.get("done"))
        assert [json.loads(f["body"])["type"] for f in replay[:-1]] == [
            "start", "start-step", "text-start", "text-delta", "text-delta", "text-delta", "text-end"]
        assert all(f["replay"] and f["seq"] == i for i, f in enumerate(replay[:-1]))
        assert replay[-1] == {"type": "cf_agent_use_chat_response", "id": "bad1", "body": "mock model exploded",
                              "done": True, "error": True}
        await ws.close()
    ws = await open_tab(tool_server, "failing", "tab-b")
    await ws.send(chat_request("ok1", [user("boom now", "u1"), user("and now", "u2")]))
    assert (await recv_until(ws, lambda f: f.get("done")))[-1]["outcome"] == "completed"
    await ws.send(json.dumps({"type": "cf_agent_stream_resume_request", "probeId": "after"}))
    assert await recv(ws) == {"type": "cf_agent_stream_resume_none", "reason": "idle", "probeId": "after"}
    await ws.close()


async def test_a_stream_a_restart_interrupted_is_saved_replayed_and_closed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # The first process: a turn streams, and the process dies before the turn ends.
    first = EmbeddedRuntime(data, idle_timeout=None)
    agent = await first.get(ToolChat, "crash")
    agent.session.save([Message.user("tell me a story", id="u1")])
    agent.streams.monotonic = itertools.count(step=0.06).__next__  # 60 ms pass between two looks at the clock
    await agent.fanout.publish(TurnStarted("r1", user_message_ids=("u1",)))
    chunks = [{"type": "start", "messageId": "a1"}, {"type": "start-step"}, {"type": "text-start", "id": "t"},
              *({"type": "text-delta", "id": "t", "delta": f"w{i} "} for i in range(25))]
    for seq, chunk in enumerate(chunks):
        await agent.fanout.publish(ChunkEvent("r1", seq, chunk))
    agent.db.close()  # no TurnFinished, no flush of what waited in memory

    app = create_app([ToolChat], runtime=EmbeddedRuntime(data, idle_timeout=60))
    with serve_in_thread(app) as live:
        url = live.agent_url("tool-chat", "crash")
        async with httpx.AsyncClient() as http:
            saved = (await http.get(live.http_url("tool-chat", "crash", "get-messages"))).json()
        words = saved[1]["parts"][-1]["text"].split()
        assert [m["id"] for m in saved] == ["u1", "a1"] and words == [f"w{i}" for i in range(len(words))]
        assert len(words) >= 20  # every row written before the crash
        ws = await ws_connect(url, max_queue=None)
        assert await recv(ws) == {"type": "cf_agent_stream_resuming", "id": "r1"}  # no transcript
        await ws.send(json.dumps({"type": "cf_agent_stream_resume_request", "probeId": "p"}))
        await ws.send(json.dumps({"type": "cf_agent_stream_resume_ack", "id": "r1"}))
        frames = await recv_until(ws, lambda f: f.get("done"))
        assert frames[2] == {"type": "cf_agent_stream_resuming", "id": "r1", "probeId": "p"}
        replay = frames[3:]
        assert [f["seq"] for f in replay[:-1]] == list(range(len(replay) - 1))
        # Closed as the turn it was: aborted, answering the user message u1.
        assert replay[-1] == {"body": "", "done": True, "id": "r1", "type": "cf_agent_use_chat_response",
                              "replay": True, "outcome": "aborted", "messageIds": ["u1"]}
        transcript = await recv(ws)
        assert transcript["type"] == "cf_agent_chat_messages" and transcript["messages"] == saved
        await ws.send(json.dumps({"type": "cf_agent_stream_resume_request", "probeId": "again"}))
        assert await recv(ws) == {"type": "cf_agent_stream_resume_none", "reason": "idle", "probeId": "again"}
        await ws.close()


async def test_a_tab_that_connects_before_the_stream_starts_is_told_it_is_pending(tool_server: LiveServer,
                                                                                 tool_connect: Connect) -> None:
    # debounced-chat answers an overlapping message only after 300 ms of quiet: e3 is accepted, e2
    # superseded; after the gated turn e1 ends, e3 waits in before_turn ("held …") until the test
    # lets it start: the pre-stream window, as long as the test needs it.
    url = tool_server.agent_url("debounced-chat", "early")
    sender = await ws_connect(url + "?_pk=tab-a", max_queue=None)
    await sender.send(json.dumps({"type": "cf_agent_stream_resume_request", "probeId": "p0"}))
    await recv_until(sender, lambda f: "probeId" in f)
    await sender.send(chat_request("e1", [user("gated one", "v1")]))
    await recv_until(sender, lambda f: f.get("body", "").endswith('"w03 "}'))
    await sender.send(chat_request("e2", [user("gated one", "v1"), user("two", "v2")]))
    await sender.send(chat_request("e3", [user("gated one", "v1"), user("two", "v2"), user("held three", "v3")]))
    async with tool_connect("early", agent="debounced-chat") as control:
        await control.call("open_gate")
        seen = await recv_until(sender, lambda f: f.get("id") == "e1" and f.get("done"))  # e1 over: e3 waits
        late = await ws_connect(url + "?_pk=tab-b", max_queue=None)
        first = await recv(late)
        assert first == {"type": "cf_agent_stream_pending", "id": "e3"}
        assert (await recv(late))["type"] == "cf_agent_chat_messages"
        await late.send(json.dumps({"type": "cf_agent_stream_resume_request", "probeId": "p1"}))
        answer = await recv_until(late, lambda f: f.get("probeId") == "p1")
        assert answer[-1] == {"type": "cf_agent_stream_pending", "id": "e3", "probeId": "p1"}
        await control.call("open_start")
        resuming = await recv_until(late, lambda f: f["type"] == "cf_agent_stream_resuming")
        assert resuming[-1] == {"type": "cf_agent_stream_resuming", "id": "e3"}
        await late.send(json.dumps({"type": "cf_agent_stream_resume_ack", "id": "e3"}))
        done = await recv_until(late, lambda f: f.get("done"))
        assert done[-1]["outcome"] == "completed"
        e2_done = {"type": "cf_agent_use_chat_response", "id": "e2", "body": "", "done": True}
        if e2_done not in seen:  # superseded: told before or after e1 ended
            seen = await recv_until(sender, lambda f: f.get("id") == "e2" and f.get("done"))
        assert e2_done in seen
        assert [m.text for m in await control.get_messages()] == [
            "gated one", "w01 w02 w03 w04 w05", "two", "held three", "Echo: held three"]
        await late.close()
    await sender.close()


async def test_a_continuation_owned_by_another_open_tab_is_not_offered(tool_server: LiveServer,
                                                                      tool_connect: Connect) -> None:
    async with tool_connect("owned") as owner, tool_connect("owned") as other:
        await owner.call("hold_continuations")
        await (await owner.send_chat("locate me"))
        await owner.send(ToolResult(tool_call_id="loc1", tool_name="get_location", output="here", auto_continue=True))
        await other.wait_until(lambda c: any(t.continuation and t.text == "w01 w02 w03 " for t in c.turns.values()))
        ws = await ws_connect(tool_server.agent_url("tool-chat", "owned"), max_queue=None)
        first = await recv(ws)
        assert first["type"] == "cf_agent_stream_resuming"  # offered on connect, as Think does
        await ws.send(json.dumps({"type": "cf_agent_stream_resume_request", "probeId": "p"}))
        answer = await recv_until(ws, lambda f: f.get("probeId") == "p")
        assert answer[-1] == {"type": "cf_agent_stream_resume_none", "reason": "continuation-owned", "probeId": "p"}
        await ws.close()
        await owner.call("open_gate")
        await owner.wait_until(lambda c: c.message_count == 3)
