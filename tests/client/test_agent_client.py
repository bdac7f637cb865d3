"""The client's pure parts: addresses, and how a turn is built from response frames."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import orjson
import pytest

from think.client import AgentClient, ChatTurn, RpcCall, RpcError
from think.protocol.frames import ChatResponse, RpcResponse


def chunk(request_id: str, seq: int, **fields: object) -> ChatResponse:
    return ChatResponse(id=request_id, body=orjson.dumps(fields).decode(), seq=seq)


def test_addresses_keep_the_query_and_carry_the_connection_id() -> None:
    client = AgentClient("https://example.com/agents/assistant/alice/?token=t&_pk=old", connection_id="abc")
    assert client.ws_url == "wss://example.com/agents/assistant/alice?token=t&_pk=abc"
    assert client.http_url == "https://example.com/agents/assistant/alice?token=t"
    assert client._http_path("get-messages") == "https://example.com/agents/assistant/alice/get-messages?token=t"
    plain = AgentClient("ws://127.0.0.1:8000/agents/a/b")
    assert plain.ws_url.startswith("ws://127.0.0.1:8000/agents/a/b?_pk=") and len(plain.connection_id) == 21
    with pytest.raises(ValueError, match="not a ws"):
        AgentClient("ftp://example.com/x")


def test_for_agent_builds_the_kebab_address() -> None:
    class ThinkChat:
        pass

    assert AgentClient.for_agent("http://h", ThinkChat, "room").http_url == "http://h/agents/think-chat/room"
    assert AgentClient.for_agent("http://h/", "ChatAgentV2", prefix="/api/agents/").http_url == \
        "http://h/api/agents/chat-agent-v2/default"


async def test_a_turn_folds_its_chunks_into_the_reply() -> None:
    turn = ChatTurn("r1")
    for frame in [chunk("r1", 0, type="start", messageId="m1"), chunk("r1", 1, type="start-step"),
                  chunk("r1", 2, type="text-start", id="t"), chunk("r1", 3, type="text-delta", id="t", delta="Hi "),
                  chunk("r1", 3, type="text-delta", id="t", delta="Hi "),  # a duplicate seq is ignored
                  chunk("r1", 4, type="text-delta", id="t", delta="there"), chunk("r1", 5, type="text-end", id="t")]:
        turn._apply(frame)
    assert turn.message.to_json() == {"id": "m1", "role": "assistant", "parts": [
        {"type": "step-start"}, {"type": "text", "text": "Hi there", "state": "done"}]}
    assert not turn.done and len(turn.chunks) == 6
    turn._apply(ChatResponse(id="r1", done=True, outcome="completed", message_ids=("u1",)))
    turn._apply(chunk("r1", 6, type="text-delta", id="t", delta="late"))  # nothing after done
    assert (turn.outcome, turn.message_ids, turn.text) == ("completed", ("u1",), "Hi there")
    assert [c["type"] async for c in turn] == ["start", "start-step", "text-start", "text-delta", "text-delta",
                                               "text-end"]
    assert await turn is turn


async def test_errors_end_a_turn() -> None:
    mid_stream = ChatTurn("r1")
    mid_stream._apply(ChatResponse(id="r1", body="model exploded", error=True))
    mid_stream._apply(ChatResponse(id="r1", done=True, outcome="error"))
    assert (mid_stream.outcome, mid_stream.error) == ("error", "model exploded")
    early = ChatTurn("r2")
    early._apply(ChatResponse(id="r2", body="no model configured", done=True, error=True))
    assert (early.outcome, early.error) == ("error", "no model configured")
    dropped = ChatTurn("r3")
    dropped._abort("the connection closed (1006)")
    assert (dropped.done, dropped.outcome, dropped.error) == (True, None, "the connection closed (1006)")


async def test_waiting_for_a_turn_is_bounded() -> None:
    turn = ChatTurn("r1", timeout=0.01)
    with pytest.raises(TimeoutError):
        await turn


async def test_a_turn_can_be_followed_while_it_streams() -> None:
    turn = ChatTurn("r1")
    seen: list[str] = []

    async def follow() -> None:
        async for c in turn:
            seen.append(c["type"])

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(follow)
        await anyio.lowlevel.checkpoint()
        turn._apply(chunk("r1", 0, type="start"))
        turn._apply(chunk("r1", 1, type="start-step"))
        turn._apply(ChatResponse(id="r1", done=True, outcome="aborted"))
    assert seen == ["start", "start-step"] and turn.outcome == "aborted"


async def test_rpc_calls_collect_chunks_then_a_result_or_an_error() -> None:
    call = RpcCall("c1", "count")
    call._apply(RpcResponse(id="c1", success=True, result=0, done=False))
    call._apply(RpcResponse(id="c1", success=True, result="done"))
    assert [c async for c in call] == [0] and await call.wait() == "done"
    failed = RpcCall("c2", "nope")
    failed._apply(RpcResponse(id="c2", success=False, error="Method nope does not exist"))
    with pytest.raises(RpcError, match="nope: Method nope does not exist"):
        await failed.wait()
    with pytest.raises(RpcError):
        [c async for c in failed]
