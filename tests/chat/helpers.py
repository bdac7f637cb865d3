"""Small helpers for reading recorded frames in the end-to-end tests."""

from __future__ import annotations

from typing import Any

import orjson

from think.protocol.frames import ChatMessages, ChatResponse, ServerFrame


def describe(frame: ServerFrame) -> Any:
    """A frame as a short, comparable value: the chunk type for stream frames."""
    match frame:
        case ChatResponse(done=True, outcome=outcome, error=error):
            return ("done", outcome, error)
        case ChatResponse(error=True, body=body):
            return ("error", body)
        case ChatResponse(replay_complete=True):
            return "replay-complete"
        case ChatResponse(body=body, seq=seq, replay=replay):
            kind = orjson.loads(body)["type"]
            return (f"replay:{kind}" if replay else kind, seq)
        case ChatMessages(messages=messages, connect=connect):
            return ("messages+connect" if connect else "messages", len(messages))
    return type(frame).__name__


def after(frames: list[ServerFrame], start: int) -> list[Any]:
    return [describe(f) for f in frames[start:]]
