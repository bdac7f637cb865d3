"""The wire protocol as plain function calls: every frame round-trips, captured frames re-encode
byte for byte, and bad input is refused with a clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from think.messages import Message
from think.protocol import (
    InvalidFrame,
    UnknownFrame,
    encode_client_frame,
    encode_frame,
    parse_frame,
    parse_server_frame,
)
from think.protocol.client_codec import chat_request_body, outcome_of
from think.protocol.codec import encode_message_list, encode_transcript
from think.protocol.frames import (
    ChatClear,
    ChatMessages,
    ChatRecovering,
    ChatRequest,
    ChatRequestCancel,
    ChatResponse,
    ClientFrame,
    ClientMessages,
    ClientToolSchema,
    FileChange,
    Identity,
    McpServers,
    MessageUpdated,
    ProtocolErrorFrame,
    RpcRequest,
    RpcResponse,
    ServerFrame,
    SetState,
    State,
    StateError,
    StreamPending,
    StreamResumeAck,
    StreamResumeNone,
    StreamResumeRequest,
    StreamResuming,
    ToolApproval,
    ToolResult,
    WorkspaceChanged,
)
from think.protocol.transcript import InvalidMessage, LazyMessages

SAMPLE = Path(__file__).with_name("frames-sample.jsonl")  # copied from shared/reference
USER = Message.from_json({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]})
REPLY = Message.from_json({"id": "a1", "role": "assistant",
                           "parts": [{"type": "step-start"}, {"type": "text", "text": "hello", "state": "done"}]})


def sample(direction: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    return [row["data"] for row in rows if row["dir"] == direction]


def compact(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


# ---- round trips ---------------------------------------------------------------------------------

CLIENT_FRAMES: list[ClientFrame] = [
    ChatRequest(id="k3Jd9a0Q", messages=(USER,)),
    ChatRequest(id="r2", messages=(USER, REPLY), trigger="regenerate-message",
                client_tools=(ClientToolSchema(name="getLocation", description="Where am I",
                                               parameters={"type": "object"}),),
                body={"temperature": 0.2, "nested": {"a": [1]}}),
    ChatRequest(id="r3", messages=(), client_tools=()),
    ChatRequestCancel("k3Jd9a0Q"),
    ChatClear(),
    ClientMessages(({"id": "x"},)),
    ToolResult(tool_call_id="call_1", tool_name="getLocation", output={"lat": 1}, auto_continue=True,
               client_tools=(ClientToolSchema(name="getLocation"),)),
    ToolResult(tool_call_id="call_2", state="output-error", error_text="denied"),
    ToolApproval(tool_call_id="call_1", approved=False, auto_continue=True),
    StreamResumeRequest("probe123"),
    StreamResumeRequest(),
    StreamResumeAck("k3Jd9a0Q"),
    SetState({"count": 1}),
    SetState(None),
    RpcRequest(id="1", method="add", args=(1, 2)),
]


@pytest.mark.parametrize("frame", CLIENT_FRAMES, ids=lambda f: type(f).__name__)
def test_every_client_frame_round_trips(frame: ClientFrame) -> None:
    assert parse_frame(encode_client_frame(frame)) == frame


SERVER_FRAMES: list[ServerFrame] = [
    ChatResponse(id="r1", body='{"type":"start-step"}', seq=3),
    ChatResponse(id="r1", body='{"type":"start-step"}', seq=3, continuation=True),
    ChatResponse(id="r1", body="it broke", error=True, message_ids=("u1",)),
    ChatResponse(id="r1", done=True, outcome="completed", message_ids=("u1",)),
    ChatResponse(id="r1", done=True, outcome="completed", continuation=True),
    ChatResponse(id="r1", body="no model", done=True, error=True),
    ChatResponse(id="r1", body='{"type":"start"}', seq=0, replay=True),
    ChatResponse(id="r1", replay=True, replay_complete=True),
    ChatResponse(id="r1", done=True, replay=True),
    ChatClear(),
    MessageUpdated(REPLY),
    Identity("room", "echo-chat"),
    State({"count": 1}),
    StateError("State update rejected"),
    McpServers(),
    StreamResuming("r1"),
    StreamResuming("r1", "p1"),
    StreamResumeNone("idle", "p1"),
    StreamResumeNone(),
    StreamPending("r1", "p1"),
    ChatRecovering(True, "r1"),
    RpcResponse(id="1", success=True, result={"a": [1, 2]}),
    RpcResponse(id="1", success=True, result=0, done=False),
    RpcResponse(id="1", success=False, error="Method nope does not exist"),
    ProtocolErrorFrame("Not a protocol frame"),
    WorkspaceChanged((FileChange("create", "/src", "directory"), FileChange("update", "/src/app.py", "file"),
                      FileChange("delete", "/old name.txt", "file"))),
    WorkspaceChanged(()),
]


@pytest.mark.parametrize("frame", SERVER_FRAMES, ids=lambda f: type(f).__name__)
def test_every_server_frame_round_trips(frame: ServerFrame) -> None:
    assert parse_server_frame(encode_frame(frame)) == frame


def test_transcripts_round_trip_and_are_validated_when_read() -> None:
    text = encode_frame(ChatMessages((USER, REPLY), connect=True))
    assert text == encode_transcript([USER.dumps(), REPLY.dumps()], connect=True)
    parsed = parse_server_frame(text)
    assert isinstance(parsed, ChatMessages) and parsed.connect
    assert isinstance(parsed.messages, LazyMessages) and len(parsed.messages) == 2
    assert list(parsed.messages) == [USER, REPLY] and parsed.messages[-1:] == [REPLY]
    assert json.loads(encode_message_list([USER.dumps()])) == [USER.to_json()]
    assert encode_message_list([]) == b"[]"


# ---- the captured frames -------------------------------------------------------------------------

_REENCODED = {"cf_agent_use_chat_response", "cf_agent_identity", "cf_agent_mcp_servers", "cf_agent_chat_clear",
              "cf_agent_stream_resuming", "cf_agent_stream_resume_none", "cf_agent_stream_pending"}


def test_captured_server_frames_reencode_byte_for_byte() -> None:
    """What the TypeScript server sent, parsed and encoded again, is the same text (key order too)."""
    checked = 0
    for data in sample("in"):
        frame = parse_server_frame(orjson.dumps(data))
        if data["type"] in _REENCODED:
            assert encode_frame(frame) == compact(data)
            checked += 1
        else:  # messages: our field order within a message differs; the JSON is the same
            assert json.loads(encode_frame(frame)) == data
    assert checked > 300


def test_captured_client_frames_parse_and_reencode() -> None:
    """Everything the JavaScript client sent parses, and our client writes the same frames."""
    for data in sample("out"):
        frame = parse_frame(compact(data))
        if isinstance(frame, ChatRequest):
            ours = json.loads(encode_client_frame(frame))
            assert list(ours) == list(data) and ours["init"]["method"] == "POST"
            assert json.loads(ours["init"]["body"]) == json.loads(data["init"]["body"])
        else:
            assert encode_client_frame(frame) == compact(data)


def test_a_captured_chat_request_is_unpacked() -> None:
    request = next(d for d in sample("out") if d["type"] == "cf_agent_use_chat_request")
    frame = parse_frame(compact(request))
    assert isinstance(frame, ChatRequest)
    assert frame.id == "cEdJzcNh" and frame.trigger == "submit-message" and not frame.is_regeneration
    assert [m.text for m in frame.messages] == ["hello streaming world"]
    assert frame.client_tools is None and frame.body == {}


def test_the_chat_body_is_split_into_messages_trigger_tools_and_custom_fields() -> None:
    body = {"messages": [USER.to_json()], "trigger": "regenerate-message", "temperature": 0.5,
            "clientTools": [{"name": "getLocation", "description": "Where", "parameters": {"type": "object"}}],
            "model": "fast"}
    frame = parse_frame(orjson.dumps({"type": "cf_agent_use_chat_request", "id": "r1",
                                      "init": {"method": "POST", "body": compact(body), "headers": {}}}))
    assert frame == ChatRequest(id="r1", messages=(USER,), trigger="regenerate-message",
                                client_tools=(ClientToolSchema(name="getLocation", description="Where",
                                                               parameters={"type": "object"}),),
                                body={"temperature": 0.5, "model": "fast"})
    assert frame.is_regeneration
    assert json.loads(chat_request_body(frame)) == body


def test_optional_fields_take_the_originals_defaults() -> None:
    assert parse_frame('{"type":"cf_agent_stream_resume_request","probeId":42}') == StreamResumeRequest(None)
    assert parse_frame('{"type":"cf_agent_tool_result","toolCallId":"c"}') == ToolResult(tool_call_id="c")
    assert parse_frame('{"type":"cf_agent_chat_messages"}') == ClientMessages(())
    assert parse_frame('{"type":"rpc","id":"1","method":"m"}') == RpcRequest(id="1", method="m")
    assert parse_frame('{"type":"cf_agent_chat_clear","extra":1}') == ChatClear()
    odd = ('{"type":"cf_agent_use_chat_request","id":"r","init":{"method":"POST",'
           '"body":"{\\"messages\\":[],\\"trigger\\":7}"}}')
    assert parse_frame(odd) == ChatRequest(id="r")  # a non-string trigger counts as a submit


# ---- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "fragment"), [
    ("not json", "not JSON"),
    ("", "not JSON"),
    ("[1, 2]", "a JSON list"),
    ('"cf_agent_chat_clear"', "a JSON str"),
    ('{"id": "x"}', 'no string "type"'),
    ('{"type": 7}', 'no string "type"'),
    ('{"type": "cf_agent_something_new"}', "unknown frame type 'cf_agent_something_new'"),
    ("[" * 5000 + "]" * 5000, "not JSON"),
])
def test_text_that_is_not_a_frame_is_unknown(text: str, fragment: str) -> None:
    with pytest.raises(UnknownFrame, match=fragment):
        parse_frame(text)


@pytest.mark.parametrize(("frame", "fragment", "frame_id"), [
    ({"type": "cf_agent_chat_request_cancel"}, "id: Field required", None),
    ({"type": "cf_agent_chat_request_cancel", "id": 5}, "id: Input should be a valid string", None),
    ({"type": "cf_agent_chat_request_cancel", "id": ""}, "id: String should have at least 1 character", None),
    ({"type": "cf_agent_stream_resume_ack", "id": None}, "id: Input should be a valid string", None),
    ({"type": "cf_agent_tool_approval", "toolCallId": "c", "approved": "yes"},
     "approved: Input should be a valid boolean", None),
    ({"type": "cf_agent_state"}, "state: Field required", None),
    ({"type": "rpc", "id": "7", "method": "add", "args": {"a": 1}}, "args: Input should be a valid list", "7"),
    ({"type": "rpc", "id": "7", "method": 3}, "method: Input should be a valid string", "7"),
    ({"type": "cf_agent_use_chat_request", "id": "r1"}, 'init.method must be "POST"', "r1"),
    ({"type": "cf_agent_use_chat_request", "id": "r1", "init": {"method": "GET", "body": "{}"}}, "must be", "r1"),
    ({"type": "cf_agent_use_chat_request", "id": "r1", "init": {"method": "POST", "body": ""}}, "non-empty", "r1"),
    ({"type": "cf_agent_use_chat_request", "id": "r1", "init": {"method": "POST", "body": 5}},
     "init.body: Input should be a valid string", "r1"),
    ({"type": "cf_agent_use_chat_request", "id": "r1", "init": {"method": "POST", "body": "{oops"}},
     "the request body is not valid JSON: unexpected character", "r1"),
    ({"type": "cf_agent_use_chat_request", "id": "r1", "init": {"method": "POST", "body": '{"messages":{}}'}},
     'the request body has no "messages" array', "r1"),
    ({"type": "cf_agent_use_chat_request", "id": "r1", "init": {"method": "POST",
      "body": '{"messages":[{"id":"m","role":"robot","parts":[]}]}'}}, "messages[0].role must be one of", "r1"),
    ({"type": "cf_agent_use_chat_request", "id": "r1", "init": {"method": "POST",
      "body": '{"messages":[{"id":"m","role":"user"},{"role":"user"}]}'}}, "messages[1].id must be a string", "r1"),
    ({"type": "cf_agent_use_chat_request", "id": "r1", "init": {"method": "POST", "body": '{"messages":[7]}'}},
     "messages[0] must be an object", "r1"),
    ({"type": "cf_agent_use_chat_request", "id": "r1", "init": {"method": "POST", "body": "[]"}},
     "must be a JSON object", "r1"),
    ({"type": "cf_agent_use_chat_request", "id": "r1", "init": {"method": "POST",
      "body": '{"messages":[],"clientTools":[{"description":"no name"}]}'}}, "clientTools[0].name", "r1"),
    ({"type": "cf_agent_use_chat_request", "id": 9, "init": {"method": "POST", "body": "{}"}},
     "id: Input should", None),
    ({"type": "cf_agent_use_chat_request", "id": "x" * 600, "init": {}}, "id: String should have at most 512", None),
])
def test_known_frames_with_wrong_fields_are_invalid(frame: dict[str, Any], fragment: str, frame_id: str | None) -> None:
    with pytest.raises(InvalidFrame) as caught:
        parse_frame(orjson.dumps(frame))
    assert fragment in str(caught.value)
    assert caught.value.frame_type == frame["type"]
    assert caught.value.frame_id == frame_id


def test_message_contents_are_validated_when_read() -> None:
    body = {"messages": [USER.to_json(), {"id": "m2", "role": "user", "parts": 7}]}
    frame = parse_frame(orjson.dumps({"type": "cf_agent_use_chat_request", "id": "r1",
                                      "init": {"method": "POST", "body": compact(body)}}))
    assert isinstance(frame, ChatRequest) and isinstance(frame.messages, LazyMessages)
    assert frame.messages[0] == USER and frame.messages.id_at(1) == "m2" and frame.messages.role_at(1) == "user"
    with pytest.raises(InvalidMessage, match=r"messages\[1\]\.parts: Input should be a valid list") as caught:
        frame.messages[1]
    assert caught.value.index == 1


def test_a_transcript_is_sent_on_as_it_came() -> None:
    raw = [{"parts": [{"type": "text", "text": "hi"}], "id": "u1", "role": "user", "metadata": {"channel": "web"}}]
    received = LazyMessages(raw)
    more = Message.user("next", id="u2")
    combined = LazyMessages.of(received, more)
    assert combined.raw == [*raw, more.to_json()] and combined[-1] is more
    body = json.loads(chat_request_body(ChatRequest(id="r", messages=combined)))
    assert list(body["messages"][0]) == ["parts", "id", "role", "metadata"]  # the client's own key order
    assert LazyMessages.of([USER], REPLY) == [USER, REPLY]


def test_unknown_server_frames_are_reported_not_guessed() -> None:
    with pytest.raises(UnknownFrame):
        parse_server_frame('{"type":"agent-tool-event"}')
    with pytest.raises(InvalidFrame):
        parse_server_frame('{"type":"cf_agent_identity","name":1,"agent":"a"}')


def test_workspace_changes_are_our_own_frame_with_camel_case_fields() -> None:
    frame = WorkspaceChanged((FileChange("create", "/notes", "directory"), FileChange("delete", "/a.md", "file")))
    assert encode_frame(frame) == compact({"type": "think_workspace_change", "changes": [
        {"kind": "create", "path": "/notes", "entryType": "directory"},
        {"kind": "delete", "path": "/a.md", "entryType": "file"}]})
    with pytest.raises(UnknownFrame):  # a server frame: never accepted from a client
        parse_frame(encode_frame(frame))


@pytest.mark.parametrize("changes", [
    None,
    {"kind": "create"},
    [{"kind": "rename", "path": "/a", "entryType": "file"}],
    [{"kind": "create", "path": 7, "entryType": "file"}],
    [{"kind": "create", "path": "/a", "entryType": "symlink"}],
    ["/a"],
])
def test_a_malformed_workspace_change_frame_is_invalid(changes: Any) -> None:
    with pytest.raises(InvalidFrame, match="think_workspace_change: changes"):
        parse_server_frame(orjson.dumps({"type": "think_workspace_change", "changes": changes}))


def test_outcome_of_a_done_frame() -> None:
    assert outcome_of(ChatResponse(id="r", seq=1, body="{}")) is None
    assert outcome_of(ChatResponse(id="r", done=True, outcome="aborted")) == "aborted"
    assert outcome_of(ChatResponse(id="r", done=True, error=True, body="x")) == "error"
    assert outcome_of(ChatResponse(id="r", done=True)) == "completed"


def test_values_that_cannot_be_sent_raise_type_error() -> None:
    with pytest.raises(TypeError):
        encode_frame(RpcResponse(id="1", success=True, result=object()))


def test_a_long_chat_request_is_parsed_with_at_most_one_garbage_collection() -> None:
    import gc

    messages = [{"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": f"message {i}"}]}
                for i in range(2_000)]
    body = orjson.dumps({"messages": messages, "trigger": "submit-message"}).decode()
    text = orjson.dumps({"type": "cf_agent_use_chat_request", "id": "r", "init": {"method": "POST", "body": body}})
    started: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(count)
    try:
        frame = parse_frame(text)
    finally:
        gc.callbacks.remove(count)
    assert isinstance(frame, ChatRequest) and len(frame.messages) == 2_000
    assert len(started) <= 1 and gc.isenabled(), started  # once, after: not over and over
