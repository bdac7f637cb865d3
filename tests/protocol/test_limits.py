"""The depth limit: how depth is counted, and where the codec applies it to client frames."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter

from tests.server.deep_agents import nested, nested_text
from think.protocol import InvalidFrame, InvalidMessage, parse_frame
from think.protocol.frames import ChatRequest, RpcRequest, SetState, ToolResult
from think.protocol.limits import IN_PART, MAX_DEPTH, TooDeep, check_depth, chunk_within_limit, json_depth


@pytest.mark.parametrize(("value", "depth"), [
    ("text", 0), (3, 0), (None, 0), ([], 1), ({}, 1), ([1, 2], 1), ({"a": [1]}, 2), ((1, (2,)), 2),
    ({"a": 1, "b": {"c": {"d": []}}, "e": [[]]}, 4), (nested(10), 10),
])
def test_depth_counts_arrays_and_objects(value: Any, depth: int) -> None:
    assert json_depth(value, stop=100) == depth


def test_counting_stops_past_the_limit_even_for_a_value_that_contains_itself() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    assert json_depth(loop) == MAX_DEPTH + 1
    assert json_depth(nested(10_000), stop=5) == 6
    with pytest.raises(TooDeep):
        check_depth(loop, "loop")


def test_the_limit_is_inclusive_and_at_counts_the_levels_around_a_value() -> None:
    check_depth(nested(MAX_DEPTH), "state")
    with pytest.raises(TooDeep, match=f"state is nested too deeply: more than {MAX_DEPTH} levels .* limit is 64"):
        check_depth(nested(MAX_DEPTH + 1), "state")
    check_depth(nested(MAX_DEPTH - IN_PART), "output", at=IN_PART)
    with pytest.raises(TooDeep, match=f"more than {MAX_DEPTH - IN_PART} levels.*limit of {MAX_DEPTH}"):
        check_depth(nested(MAX_DEPTH - IN_PART + 1), "output", at=IN_PART)


def test_the_limit_is_far_below_what_the_encoders_accept() -> None:
    import orjson

    from think.messages import MESSAGES, Message

    # a message at the limit inside the deepest envelope a server frame or a client request puts it in
    message = {"id": "m", "role": "user", "parts": [{"type": "data-x", "data": nested(MAX_DEPTH - IN_PART)}]}
    assert json_depth(message) == MAX_DEPTH
    orjson.dumps({"messages": [message]})
    MESSAGES.validate_json(orjson.dumps([message]))
    Message.model_validate_json(orjson.dumps(message))
    envelope = 8  # more than any frame or request adds around a message or a state
    orjson.dumps(nested(MAX_DEPTH + envelope))
    TypeAdapter(Any).validate_json(nested_text(MAX_DEPTH + envelope))  # pydantic's parser: the strictest


def frame(text: str) -> Any:
    return parse_frame(text)


def test_a_state_deeper_than_the_limit_is_an_invalid_frame() -> None:
    assert isinstance(frame(f'{{"type":"cf_agent_state","state":{nested_text(MAX_DEPTH)}}}'), SetState)
    with pytest.raises(InvalidFrame, match=r"cf_agent_state: state is nested too deeply.*limit is 64"):
        frame(f'{{"type":"cf_agent_state","state":{nested_text(MAX_DEPTH + 1)}}}')


def test_rpc_arguments_are_measured_one_by_one() -> None:
    ok = frame(f'{{"type":"rpc","id":"c1","method":"m","args":[1,{nested_text(MAX_DEPTH)}]}}')
    assert isinstance(ok, RpcRequest)
    with pytest.raises(InvalidFrame, match=r"rpc: args\[1\] is nested too deeply") as caught:
        frame(f'{{"type":"rpc","id":"c1","method":"m","args":[1,{nested_text(MAX_DEPTH + 1)}]}}')
    assert caught.value.frame_id == "c1"  # answered with an RPC error of its own


def test_a_tool_result_output_counts_the_levels_of_its_part() -> None:
    def result(depth: int) -> str:
        return f'{{"type":"cf_agent_tool_result","toolCallId":"t1","output":{nested_text(depth)}}}'

    assert isinstance(frame(result(MAX_DEPTH - IN_PART)), ToolResult)
    with pytest.raises(InvalidFrame, match="cf_agent_tool_result: output is nested too deeply"):
        frame(result(MAX_DEPTH - IN_PART + 1))
    tools = json.dumps([{"name": "t", "parameters": nested(MAX_DEPTH)}])
    with pytest.raises(InvalidFrame, match=r"clientTools\[0\] is nested too deeply"):
        frame(f'{{"type":"cf_agent_tool_result","toolCallId":"t1","output":1,"clientTools":{tools}}}')


def chat(messages: list[Any] | str, **body: Any) -> str:
    text = messages if isinstance(messages, str) else json.dumps(messages)
    extra = "".join(f',"{k}":{json.dumps(v)}' for k, v in body.items())
    return json.dumps({"type": "cf_agent_use_chat_request", "id": "r1",
                       "init": {"method": "POST", "body": f'{{"messages":{text}{extra}}}'}})


def test_a_transcript_message_is_measured_when_it_is_read() -> None:
    deep = {"id": "u2", "role": "user", "parts": [], "metadata": nested(MAX_DEPTH)}
    fine = {"id": "u1", "role": "user", "parts": [], "metadata": nested(MAX_DEPTH - 1)}
    request = frame(chat([fine, deep]))
    assert isinstance(request, ChatRequest)
    assert request.messages[0].id == "u1"
    with pytest.raises(InvalidMessage, match=r"messages\[1\] is nested too deeply.*limit is 64"):
        request.messages[1]


def test_client_tool_schemas_and_the_custom_body_are_measured() -> None:
    with pytest.raises(InvalidFrame, match=r"clientTools\[0\] is nested too deeply") as caught:
        frame(chat([], clientTools=[{"name": "t", "parameters": nested(MAX_DEPTH)}]))
    assert caught.value.frame_id == "r1"
    with pytest.raises(InvalidFrame, match="the request body is nested too deeply"):
        frame(chat([], extra=nested(MAX_DEPTH)))
    assert isinstance(frame(chat([], extra=nested(MAX_DEPTH - 1))), ChatRequest)


def test_a_chunk_too_deep_for_its_message_is_replaced_or_dropped() -> None:
    fits = {"type": "tool-output-available", "toolCallId": "c", "output": nested(MAX_DEPTH - IN_PART)}
    assert chunk_within_limit(fits) is fits
    deep_output = {**fits, "output": nested(MAX_DEPTH - IN_PART + 1)}
    replaced = chunk_within_limit(deep_output)
    assert replaced is not None and replaced["type"] == "tool-output-error" and replaced["toolCallId"] == "c"
    assert "limit of 64" in replaced["errorText"]
    deep_input = {"type": "tool-input-available", "toolCallId": "c", "toolName": "t", "input": nested(300)}
    assert (chunk_within_limit(deep_input) or {}).get("type") == "tool-input-error"
    assert chunk_within_limit({"type": "data-x", "data": nested(300)}) is None
    start = {"type": "start", "messageId": "m1", "messageMetadata": nested(300)}
    assert chunk_within_limit(start) == {"type": "start", "messageId": "m1"}  # the stream keeps its shape
    delta = {"type": "reasoning-delta", "id": "r", "delta": "hm", "providerMetadata": {"x": nested(100)}}
    assert chunk_within_limit(delta) == {"type": "reasoning-delta", "id": "r", "delta": "hm"}
    assert chunk_within_limit({"type": "tool-output-available", "toolCallId": "c", "output": nested(300),
                               "preliminary": True}) is None
