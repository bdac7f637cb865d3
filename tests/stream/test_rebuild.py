"""`message_chunks`: the chunks a late client gets for a stored message rebuild that message."""

from __future__ import annotations

from think.messages import Message
from think.stream.fold import Fold
from think.stream.rebuild import message_chunks

STORED = {"id": "m1", "role": "assistant", "parts": [
    {"type": "step-start"},
    {"type": "reasoning", "text": "Think first.", "state": "done"},
    {"type": "text", "text": "Looking it up. ", "state": "done"},
    {"type": "tool-lookup", "toolCallId": "c1", "state": "output-available", "input": {"q": "x"}, "output": "found"},
    {"type": "tool-charge", "toolCallId": "c2", "state": "output-error", "input": {"amount": 5},
     "errorText": "interrupted"},
    {"type": "tool-delete", "toolCallId": "c3", "state": "approval-requested", "input": {},
     "approval": {"id": "a3"}},
    {"type": "dynamic-tool", "toolName": "mcp_x", "toolCallId": "c4", "state": "output-denied", "input": {}},
    {"type": "data-progress", "id": "p1", "data": {"fraction": 0.5}},
    {"type": "source-url", "sourceId": "s1", "url": "https://example.com", "title": "Example"},
    {"type": "step-start"},
    {"type": "text", "text": "Half an answer", "state": "streaming"},
]}


def test_the_chunks_of_a_stored_message_fold_back_into_it() -> None:
    stored = Message.from_json(STORED)
    chunks = message_chunks(stored)
    assert chunks[0] == {"type": "start", "messageId": "m1"}
    fold = Fold(Message(id="other", role="assistant"))
    for chunk in chunks:
        fold.apply(chunk)
    rebuilt = fold.message
    assert rebuilt.id == "m1"
    assert [_plain(p.to_json()) for p in rebuilt.parts] == [_plain(p.to_json()) for p in stored.parts]


def _plain(part: dict[str, object]) -> dict[str, object]:
    """A static tool part names its tool in its type (the fold also keeps `toolName`)."""
    if str(part["type"]).startswith("tool-"):
        part.pop("toolName", None)
    return part
