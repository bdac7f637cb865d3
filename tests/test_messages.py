"""The UIMessage model: validation at the edge, exact wire form, unknown fields kept."""

from __future__ import annotations

import orjson
import pytest
from pydantic import ValidationError

from think.messages import MESSAGES, DataPart, Message, TextPart, ToolPart, _json_validator

FULL = {
    "id": "m1", "role": "assistant", "metadata": {"channel": "web"},
    "parts": [
        {"type": "step-start"},
        {"type": "reasoning", "text": "r", "state": "done", "providerMetadata": {"anthropic": {"signature": "s"}}},
        {"type": "text", "text": "hello", "state": "streaming", "newFieldFromTheFuture": 1},
        {"type": "tool-get_weather", "toolCallId": "c1", "state": "output-available", "input": {"city": None},
         "output": None, "callProviderMetadata": {"x": {}}},
        {"type": "dynamic-tool", "toolName": "mcp_search", "toolCallId": "c2", "state": "output-denied",
         "input": {}, "approval": {"id": "a", "approved": False, "reason": "no"}},
        {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AA==", "filename": "a.png"},
        {"type": "source-url", "sourceId": "s", "url": "https://example.com"},
        {"type": "source-document", "sourceId": "d", "mediaType": "text/plain", "title": "T"},
        {"type": "data-progress", "id": "p", "data": {"pct": 50}},
        {"type": "custom", "kind": "a.b"},
        {"type": "reasoning-file", "mediaType": "image/png", "url": "data:,"},
    ],
}


def test_a_full_message_round_trips_byte_for_byte() -> None:
    wire = FULL
    message = Message.from_json(wire)
    assert message.to_json() == wire
    assert isinstance(message.parts[2], TextPart) and isinstance(message.parts[8], DataPart)
    tool = message.parts[3]
    assert isinstance(tool, ToolPart) and tool.name == "get_weather" and tool.settled
    assert message.tool_parts[1].name == "mcp_search"
    assert Message.from_json(message.dumps()) == message


@pytest.mark.parametrize("bad", [
    {"id": "x", "role": "robot", "parts": []},
    {"id": "", "role": "user", "parts": []},
    {"id": "x", "role": "user", "parts": [{"type": "text", "text": 5}]},
    {"id": "x", "role": "user", "parts": [{"type": "tool-x", "state": "weird", "toolCallId": "c"}]},
    {"id": "x", "role": "user", "parts": [{"type": "no-such-part"}]},
    {"id": "x", "role": "user", "parts": [{"text": "missing type"}]},
    {"role": "user", "parts": []},
])
def test_invalid_messages_are_rejected_with_a_path(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Message.from_json(bad)


EDGE_PARTS = [
    {"type": "tool"}, {"type": "tool-"}, {"type": "data-"}, {"type": "data"}, {"type": "dynamic-tool"},
    {"type": "dynamic-tool", "toolCallId": "c", "state": "input-available", "input": {}},
    {"type": "tool-data-x", "toolCallId": "c", "state": "input-streaming"}, {"type": "data-tool-x", "data": []},
    {"type": "text", "text": 5}, {"type": "no-such-part"}, {"text": "missing type"}, {"type": 7}, 5, None,
    {"type": "step-start", "extra": {"kept": True}}, {"type": "file", "url": "u"},
]


def _decoded_both_ways(body: bytes) -> tuple[object, object]:
    """What `Message`'s own schema and the keyed one `from_json` uses make of `body`."""
    results: list[object] = []
    for validate in (Message.model_validate_json, _json_validator().validate_json):
        try:
            message = validate(body)
        except ValidationError:
            results.append("rejected")
        else:
            results.append((message, type(message), [type(p) for p in message.parts], message.model_fields_set,
                            [(p.model_fields_set, p.model_extra) for p in message.parts], message.to_json()))
    return results[0], results[1]


@pytest.mark.parametrize("part", [*FULL["parts"], *EDGE_PARTS])  # type: ignore[misc]
def test_json_is_decoded_by_part_type_with_exactly_the_message_schemas_result(part: object) -> None:
    body = orjson.dumps({"id": "m", "role": "assistant", "parts": [{"type": "text", "text": "a"}, part]})
    own, keyed = _decoded_both_ways(body)
    assert keyed == own


def test_a_whole_message_decodes_the_same_both_ways() -> None:
    own, keyed = _decoded_both_ways(orjson.dumps(FULL))
    assert keyed == own and own != "rejected"


def test_json_that_fails_is_reported_in_the_message_schemas_words() -> None:
    body = b'{"id":"x","role":"user","parts":[{"type":"text","text":5}]}'
    with pytest.raises(ValidationError) as keyed:  # the keyed schema is the one in use: its own words
        _json_validator().validate_json(body)
    assert any("tagged-union" in str(loc) for error in keyed.value.errors() for loc in error["loc"])
    with pytest.raises(ValidationError) as caught:
        Message.from_json(body)
    assert [e["loc"] for e in caught.value.errors()] == [("parts", 0, "text", "text")]


def test_a_transcript_validates_as_a_list() -> None:
    messages = MESSAGES.validate_python([{"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}])
    assert messages[0].text == "hi"


def test_new_ids_are_alphanumeric_of_the_asked_size_and_every_letter_is_equally_likely() -> None:
    from collections import Counter

    from think.messages import new_id

    ids = [new_id() for _ in range(6_200)]
    assert len(set(ids)) == len(ids) and all(len(i) == 16 and i.isascii() and i.isalnum() for i in ids)
    assert len(new_id(3)) == 3 and len(new_id(100)) == 100
    seen = Counter("".join(ids))  # 99,200 letters: 1,600 of each of the 62 expected
    assert len(seen) == 62
    assert all(1_350 < n < 1_850 for n in seen.values())  # over six standard deviations (≈ 40) either side
