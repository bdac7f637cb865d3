"""The AG-UI codec without a server: chunks → events (`RunEncoder`), the transcript ↔ AG-UI
messages, and the JSON Patch of a state change."""

from __future__ import annotations

from typing import Any

from ag_ui.core import AssistantMessage, ReasoningMessage, ToolMessage, UserMessage

from think.messages import Message, ReasoningPart, TextPart, ToolPart
from think.ui_protocols.ag_ui.events import RunEncoder
from think.ui_protocols.ag_ui.messages import split_input, to_ag_ui
from think.ui_protocols.ag_ui.state import json_patch


def _events(chunks: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    encoder = RunEncoder()
    out = [e for c in chunks for e in encoder.feed(c)] + encoder.close()
    return [(e.type.value, *(str(v) for k, v in e.model_dump().items() if k in ("message_id", "delta", "tool_call_id")
                             and v is not None)) for e in out]


def test_text_parts_of_one_message_are_one_ag_ui_message_joined_like_message_text() -> None:
    events = _events([{"type": "start", "messageId": "m1"}, {"type": "start-step"},
                      {"type": "text-start", "id": "t0"}, {"type": "text-delta", "id": "t0", "delta": "First."},
                      {"type": "text-end", "id": "t0"},
                      {"type": "tool-input-start", "toolCallId": "c1", "toolName": "add"},
                      {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{}"},
                      {"type": "tool-input-available", "toolCallId": "c1", "toolName": "add", "input": {}},
                      {"type": "tool-output-available", "toolCallId": "c1", "output": {"sum": 3}},
                      {"type": "finish-step"}, {"type": "start-step"},
                      {"type": "text-start", "id": "t1"}, {"type": "text-delta", "id": "t1", "delta": "Second."},
                      {"type": "text-end", "id": "t1"}, {"type": "finish-step"}, {"type": "finish"}])
    assert events == [
        ("STEP_STARTED",), ("TEXT_MESSAGE_START", "m1"), ("TEXT_MESSAGE_CONTENT", "m1", "First."),
        ("TEXT_MESSAGE_END", "m1"), ("TOOL_CALL_START", "c1"), ("TOOL_CALL_ARGS", "c1", "{}"), ("TOOL_CALL_END", "c1"),
        ("TOOL_CALL_RESULT", "result-c1", "c1"), ("STEP_FINISHED",), ("STEP_STARTED",), ("TEXT_MESSAGE_START", "m1"),
        ("TEXT_MESSAGE_CONTENT", "m1", "\n\nSecond."), ("TEXT_MESSAGE_END", "m1"), ("STEP_FINISHED",)]


def test_close_ends_what_a_cut_stream_left_open() -> None:
    events = _events([{"type": "start", "messageId": "m1"}, {"type": "start-step"},
                      {"type": "reasoning-delta", "id": "r", "delta": "hmm"},
                      {"type": "tool-input-start", "toolCallId": "c1", "toolName": "add"}])
    assert events[2:] == [("REASONING_MESSAGE_START", "m1/reasoning-0"),
                          ("REASONING_MESSAGE_CONTENT", "m1/reasoning-0", "hmm"),
                          ("REASONING_MESSAGE_END", "m1/reasoning-0"), ("REASONING_END", "m1/reasoning-0"),
                          ("TOOL_CALL_START", "c1"), ("TOOL_CALL_END", "c1"), ("STEP_FINISHED",)]


def test_a_call_that_was_not_streamed_gets_its_whole_input_at_once() -> None:
    events = _events([{"type": "start", "messageId": "m1"},
                      {"type": "tool-input-available", "toolCallId": "c9", "toolName": "f", "input": {"a": 1}}])
    assert events == [("TOOL_CALL_START", "c9"), ("TOOL_CALL_ARGS", "c9", '{"a":1}'), ("TOOL_CALL_END", "c9")]


def test_the_transcript_as_ag_ui_messages_and_back() -> None:
    reply = Message(id="a1", role="assistant", parts=[
        ReasoningPart(text="thinking"), TextPart(text="One."),
        ToolPart(type="tool-add", tool_call_id="c1", tool_name="add", state="output-available", input={"x": 1},
                 output=2),
        ToolPart(type="tool-ask", tool_call_id="c2", tool_name="ask", state="approval-requested", input={}),
        TextPart(text="Two.")])
    out = to_ag_ui([Message.user("hi", id="u1"), reply])
    assert [type(m) for m in out] == [UserMessage, ReasoningMessage, AssistantMessage, ToolMessage]
    assistant = out[2]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content == "One.\n\nTwo."
    assert [(c.id, c.function.name, c.function.arguments) for c in assistant.tool_calls or ()] == [
        ("c1", "add", '{"x":1}'), ("c2", "ask", "{}")]
    assert out[3].content == "2"  # only the settled call has a result
    back = split_input([*out, ToolMessage(id="t", tool_call_id="c2", content="yes")])
    assert [(m.id, m.role) for m in back.messages] == [("u1", "user"), ("a1", "assistant")]
    assert [(r.tool_call_id, r.output) for r in back.results] == [("c1", "2"), ("c2", "yes")]


def test_json_patch_of_a_state_change() -> None:
    old = {"count": 1, "list": [1], "nested": {"a": 1, "b": 2}, "gone": True, "a/b": 0}
    new = {"count": 2, "list": [1, 2], "nested": {"a": 1, "c": 3}, "new": None, "a/b": 1}
    assert json_patch(old, new) == [
        {"op": "remove", "path": "/gone"}, {"op": "replace", "path": "/count", "value": 2},
        {"op": "replace", "path": "/list", "value": [1, 2]}, {"op": "remove", "path": "/nested/b"},
        {"op": "add", "path": "/nested/c", "value": 3}, {"op": "add", "path": "/new", "value": None},
        {"op": "replace", "path": "/a~1b", "value": 1}]
    assert json_patch(new, new) == []
