"""Payloads the server sends that the agent's own code builds (no frame models needed): a chunk
as a response frame's `body`, and an `agent-tool-event`. Kept apart from `codec` so that running a
turn does not load the frame models."""

from __future__ import annotations

import orjson

from think.messages import JSONObject

__all__ = ["agent_tool_event", "chunk_body"]


def chunk_body(chunk: JSONObject) -> str:
    """A UI message chunk as the `body` string of a response frame."""
    return orjson.dumps(chunk).decode()


def agent_tool_event(sequence: int, event: JSONObject, parent_tool_call_id: str | None = None, *,
                     replay: bool = False) -> JSONObject:
    """`agent-tool-event` (reference §2.9): one event of a child run, live or replayed."""
    frame: JSONObject = {"type": "agent-tool-event", "sequence": sequence}
    if replay:
        frame["replay"] = True
    frame["event"] = event
    if parent_tool_call_id is not None:
        frame["parentToolCallId"] = parent_tool_call_id
    return frame
