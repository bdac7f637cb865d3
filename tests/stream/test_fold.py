"""The server-side fold of UI chunks into the assistant message."""

from __future__ import annotations

from think.messages import JSONObject, Message
from think.stream.fold import Fold


def fold(chunks: list[JSONObject], *, message_id: str = "m1", continuation: bool = False) -> Fold:
    f = Fold(Message(id=message_id, role="assistant"), continuation=continuation)
    for chunk in chunks:
        f.apply(chunk)
    return f


TOOL_TURN: list[JSONObject] = [
    {"type": "start", "messageId": "m1"},
    {"type": "start-step"},
    {"type": "reasoning-start", "id": "r"},
    {"type": "reasoning-delta", "id": "r", "delta": "Think"},
    {"type": "reasoning-delta", "id": "r", "delta": "ing", "providerMetadata": {"anthropic": {"signature": "s1"}}},
    {"type": "reasoning-end", "id": "r"},
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "calc"},
    {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a":'},
    {"type": "tool-input-available", "toolCallId": "c1", "toolName": "calc", "input": {"a": 1}},
    {"type": "tool-output-available", "toolCallId": "c1", "output": {"r": 2}},
    {"type": "finish-step"},
    {"type": "start-step"},
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "It is "},
    {"type": "text-delta", "id": "t", "delta": "2."},
    {"type": "text-end", "id": "t"},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop", "messageMetadata": {"k": 1}},
]

EXPECTED = {
    "id": "m1", "role": "assistant", "metadata": {"k": 1},
    "parts": [
        {"type": "step-start"},
        {"type": "reasoning", "text": "Thinking", "state": "done",
         "providerMetadata": {"anthropic": {"signature": "s1"}}},
        {"type": "tool-calc", "toolCallId": "c1", "toolName": "calc", "state": "output-available",
         "input": {"a": 1}, "output": {"r": 2}},
        {"type": "step-start"},
        {"type": "text", "text": "It is 2.", "state": "done"},
    ],
}


def test_a_tool_turn_folds_into_the_persisted_shape() -> None:
    f = fold(TOOL_TURN)
    assert f.message.to_json() == EXPECTED
    assert f.finish_reason == "stop"


def test_replaying_the_stream_from_the_first_chunk_does_not_duplicate_anything() -> None:
    f = fold(TOOL_TURN + TOOL_TURN)
    assert f.message.to_json() == EXPECTED


def test_a_replayed_tool_input_start_does_not_regress_a_settled_call() -> None:
    f = fold([*TOOL_TURN[:10], TOOL_TURN[6], TOOL_TURN[8]])
    part = f.message.tool_parts[0]
    assert (part.state, part.output) == ("output-available", {"r": 2})


def test_continuation_keeps_its_own_id_and_tolerates_deltas_without_start() -> None:
    f = fold([{"type": "start", "messageId": "other"}, {"type": "text-delta", "id": "x", "delta": "hi"}],
             continuation=True)
    assert f.message.id == "m1"
    assert f.message.to_json()["parts"] == [{"type": "text", "text": "hi", "state": "streaming"}]


def test_errors_denials_approvals_and_input_errors() -> None:
    f = fold([
        {"type": "tool-input-start", "toolCallId": "a", "toolName": "pay"},
        {"type": "tool-input-available", "toolCallId": "a", "toolName": "pay", "input": '{"n": 1}'},
        {"type": "tool-approval-request", "approvalId": "ap1", "toolCallId": "a"},
        {"type": "tool-input-available", "toolCallId": "b", "toolName": "x", "input": [1, 2]},
        {"type": "tool-output-error", "toolCallId": "b", "errorText": "bad"},
        {"type": "tool-input-error", "toolCallId": "c", "toolName": "zz", "input": "{oops", "errorText": "no such tool",
         "dynamic": True},
        {"type": "tool-input-available", "toolCallId": "d", "toolName": "y", "input": {}},
        {"type": "tool-output-denied", "toolCallId": "d"},
        {"type": "tool-input-error", "toolCallId": "d", "toolName": "y", "input": {}, "errorText": "late"},
    ])
    a, b, c, d = f.message.to_json()["parts"]
    assert a == {"type": "tool-pay", "toolCallId": "a", "toolName": "pay", "state": "approval-requested",
                 "input": {"n": 1}, "approval": {"id": "ap1"}}
    assert b == {"type": "tool-x", "toolCallId": "b", "toolName": "x", "state": "output-error", "input": {},
                 "errorText": "bad"}
    assert c == {"type": "dynamic-tool", "toolCallId": "c", "toolName": "zz", "state": "output-error",
                 "input": "{oops", "errorText": "no such tool"}
    assert d["state"] == "output-denied"  # a late input error does not regress a settled part


def test_preliminary_outputs_are_replaced_by_the_final_one() -> None:
    f = fold([
        {"type": "tool-input-available", "toolCallId": "a", "toolName": "p", "input": {}},
        {"type": "tool-output-available", "toolCallId": "a", "output": 1, "preliminary": True},
        {"type": "tool-output-available", "toolCallId": "a", "output": 2},
        {"type": "tool-output-available", "toolCallId": "a", "output": 3},
    ])
    part = f.message.tool_parts[0]
    assert (part.output, part.preliminary) == (2, None)  # settled: later outputs are ignored


def test_outputs_for_calls_in_an_earlier_message_are_reported_not_dropped() -> None:
    f = fold([{"type": "tool-output-available", "toolCallId": "old", "output": 5}])
    assert f.message.parts == []
    assert f.cross_message == [{"type": "tool-output-available", "toolCallId": "old", "output": 5}]


def test_data_files_sources_metadata_and_errors() -> None:
    f = fold([
        {"type": "data-weather", "id": "w", "data": {"t": 1}},
        {"type": "data-weather", "id": "w", "data": {"t": 2}},
        {"type": "data-note", "data": "transient", "transient": True},
        {"type": "file", "url": "data:text/plain;base64,aGk=", "mediaType": "text/plain"},
        {"type": "source-url", "sourceId": "s1", "url": "https://example.com", "title": "Ex"},
        {"type": "source-document", "sourceId": "s2", "mediaType": "application/pdf", "title": "Doc"},
        {"type": "message-metadata", "messageMetadata": {"a": 1}},
        {"type": "message-metadata", "messageMetadata": {"b": 2}},
        {"type": "error", "errorText": "boom"},
        {"type": "abort"},
        {"type": "custom", "kind": "x.y"},
        {"type": "reasoning-file", "url": "data:,", "mediaType": "text/plain"},
        {"type": "tool-approval-response", "approvalId": "a", "approved": True},
    ])
    out = f.message.to_json()
    assert out["parts"] == [
        {"type": "data-weather", "id": "w", "data": {"t": 2}},
        {"type": "file", "mediaType": "text/plain", "url": "data:text/plain;base64,aGk="},
        {"type": "source-url", "sourceId": "s1", "url": "https://example.com", "title": "Ex"},
        {"type": "source-document", "sourceId": "s2", "mediaType": "application/pdf", "title": "Doc"},
    ]
    assert out["metadata"] == {"a": 1, "b": 2}
    assert f.errors == ["boom"]
