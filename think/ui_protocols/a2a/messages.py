"""A2A messages ↔ ours, and the answers a client's reply to an `input-required` task carries.

In: an A2A `Message` from a client becomes one user message under a server-made id (the client's
`messageId` is the submission's idempotency key, never a stored id), its metadata cleaned by
`think.turns.trust.from_web` like every client's new message. Text parts stay text, file parts
(`url`, `raw`) become file parts, data parts become their JSON as text.

Out: a stored message becomes an A2A `Message` (`ROLE_USER` / `ROLE_AGENT`) of its text and
files, under its stored id.

A reply to a task that waits (`answers_in`): a data part `{"approved": true|false}` (with
`"toolCallId"` to name one call; without, it answers every waiting approval), or a text part that
is just yes or no, answers approvals; `{"toolCallId": …, "output": …}` (or `"error": …`) is a client
tool's result. Anything else is not an answer.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from a2a.types.a2a_pb2 import Message as A2AMessage
from a2a.types.a2a_pb2 import Part, Role
from google.protobuf.json_format import MessageToDict

from think.messages import FilePart, Message, TextPart
from think.turns.trust import check_files, from_web

YES = frozenset({"yes", "y", "approve", "approved", "ok", "allow"})
NO = frozenset({"no", "n", "deny", "denied", "reject", "refuse"})


def from_a2a(message: A2AMessage) -> Message:
    """A client's message as the user message to store (see the module docstring)."""
    parts: list[Any] = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        media = part.media_type or "application/octet-stream"
        if kind == "text":
            parts.append(TextPart(text=part.text))
        elif kind == "url":
            parts.append(FilePart(media_type=media, url=part.url, filename=part.filename or None))
        elif kind == "raw":
            data = base64.b64encode(part.raw).decode()
            parts.append(FilePart(media_type=media, url=f"data:{media};base64,{data}", filename=part.filename or None))
        elif kind == "data":
            value = plain(MessageToDict(part)["data"])
            parts.append(TextPart(text=orjson.dumps(value).decode()))
    metadata = MessageToDict(message.metadata) if message.HasField("metadata") else None
    incoming = Message(id=str(uuid.uuid4()), role="user", parts=parts, metadata=metadata or None)
    check_files(0, incoming)  # a workspace: URL is the server's to write
    return from_web(incoming)


def plain(value: Any) -> Any:
    """A protobuf `Value` as read (numbers are doubles there): whole numbers back to ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def to_a2a(message: Message, *, context_id: str, task_id: str) -> A2AMessage:
    """A stored message as an A2A message of the task."""
    out = A2AMessage(message_id=message.id, context_id=context_id, task_id=task_id,
                     role=Role.ROLE_USER if message.role == "user" else Role.ROLE_AGENT)
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            out.parts.append(Part(text=part.text))
        elif isinstance(part, FilePart):
            out.parts.append(Part(url=part.url, media_type=part.media_type, filename=part.filename or ""))
    return out


def text_part(text: str) -> Part:
    return Part(text=text)


@dataclass(frozen=True)
class Approval:
    approved: bool
    tool_call_id: str | None = None
    """None: every approval the task waits for."""


@dataclass(frozen=True)
class Result:
    tool_call_id: str
    output: Any
    error: str | None = None


Answer = Approval | Result


def answers_in(message: A2AMessage) -> list[Answer]:
    """The answers a reply to a waiting task carries (see the module docstring)."""
    out: list[Answer] = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            word = part.text.strip().strip(".!").lower()
            if word in YES or word in NO:
                out.append(Approval(word in YES))
        elif kind == "data":
            value = plain(MessageToDict(part).get("data"))
            if not isinstance(value, dict):
                continue
            call = value.get("toolCallId")
            call_id = call if isinstance(call, str) and call else None
            if isinstance(value.get("approved"), bool):
                out.append(Approval(bool(value["approved"]), call_id))
            elif call_id is not None and ("output" in value or "error" in value):
                error = value.get("error")
                out.append(Result(call_id, value.get("output"), str(error) if error is not None else None))
    return out
