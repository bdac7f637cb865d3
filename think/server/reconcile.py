"""Reconciling the transcript a client sends with every chat request against the server's.

The stock client resends its whole transcript each time; the server's copy is authoritative.
What the client may contribute are new user messages. So, for each incoming message:

* an id the server has (on any branch, or the reply streaming now): the server's copy stands.
  Stale client states (a tool part the client still shows waiting) need nothing more. A client
  copy that claims a result the server does not have for a tool the server runs itself is a
  forgery and refused; so is an id the server has under another role.
* an assistant message with an id the server does not know adopts the id of the server's
  message it matches (a shared tool call id, or the same text): clients that followed a stream
  from another tab may hold such copies. One that matches nothing is refused: a client cannot add
  a reply the server did not write. A new `system` message is refused too.
* a new user message is kept: the server-only metadata keys (`channel`, `turnMetadata`) are
  stripped from it and `metadata.channel` is set to `"web"`.

Messages the server already has are never read in full, so a long transcript costs little.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from think.errors import ProtocolError
from think.messages import SETTLED_TOOL_STATES, Message, ToolPart
from think.protocol.transcript import LazyMessages
from think.sessions.session import Session

SERVER_ONLY_METADATA = ("channel", "turnMetadata")
_RECENT = 16


class Rejected(ProtocolError):
    """The client's transcript tries something a client may not do (the reason says what)."""


@dataclass
class Incoming:
    """A reconciled request transcript."""

    fresh: list[Message] = field(default_factory=list)
    """New user messages to save, in order (metadata already cleaned)."""
    ids: list[str] = field(default_factory=list)
    """Every incoming message's id as the server knows it (adopted ids replaced)."""

    def new_messages(self, session: Session) -> list[Message]:
        """The fresh messages the session still does not have (another request may have saved
        some while this one waited)."""
        return [m for m in self.fresh if session.get(m.id) is None and session.get_message(m.id) is None]


def from_web(message: Message) -> Message:
    """A client's new message as stored: server-only metadata out, `channel: "web"` in."""
    metadata = {k: v for k, v in message.metadata.items() if k not in SERVER_ONLY_METADATA} \
        if isinstance(message.metadata, dict) else {}
    if message.role == "user":
        metadata["channel"] = "web"
    return message.model_copy(update={"metadata": metadata or None})


def _settled_claims(raw: Any) -> dict[str, str]:
    """Tool call id → state, for the tool parts of a raw client message that claim a result."""
    claims: dict[str, str] = {}
    parts = raw.get("parts") if isinstance(raw, dict) else None
    for part in parts if isinstance(parts, list) else ():
        if isinstance(part, dict) and isinstance(part.get("toolCallId"), str) \
                and part.get("state") in ("output-available", "output-error"):
            claims[part["toolCallId"]] = part["state"]
    return claims


def _text(message: Message) -> str:
    return message.text


def reconcile(incoming: Sequence[Message], session: Session, *, server_tools: Collection[str],
              in_flight: str | None = None) -> Incoming:
    """Check and map a client's transcript against `session` (see the module docstring).

    `server_tools` are the names of tools the server executes itself; `in_flight` is the id of
    the reply streaming now (not saved yet). Raises `Rejected`.
    """
    lazy = incoming if isinstance(incoming, LazyMessages) else LazyMessages.of(incoming)
    out = Incoming()
    history = session.history()
    open_calls: dict[str, tuple[ToolPart, str]] = {}  # server parts that may still get a result
    for message in history[-_RECENT:] + session.unsettled():
        for part in message.parts:
            if isinstance(part, ToolPart) and part.state not in SETTLED_TOOL_STATES:
                open_calls[part.tool_call_id] = (part, message.id)
    adopted: set[str] = set()
    for index in range(len(lazy)):
        message_id, role = lazy.id_at(index), lazy.role_at(index)
        known = session.get(message_id) or session.get_message(message_id)
        if known is None and message_id == in_flight and role == "assistant":
            out.ids.append(message_id)
            continue
        if known is not None:
            if known.role != role:
                raise Rejected(f"messages[{index}] ({message_id!r}) is a {known.role} message on the server; "
                               f"a client cannot send it as a {role} message")
            if role == "assistant" and open_calls:
                _check_claims(lazy.raw[index], index, open_calls, server_tools)
            out.ids.append(message_id)
            continue
        if role == "system":
            raise Rejected(f"messages[{index}]: a client cannot add a system message")
        message = lazy[index]
        if role == "assistant":
            match = _adopt(message, history, adopted)
            if match is None:
                raise Rejected(f"messages[{index}]: a client cannot add an assistant message the server did "
                               f"not write (id {message_id!r})")
            adopted.add(match)
            out.ids.append(match)
            continue
        out.fresh.append(from_web(message))
        out.ids.append(message_id)
    return out


def _check_claims(raw: Any, index: int, open_calls: dict[str, tuple[ToolPart, str]],
                  server_tools: Collection[str]) -> None:
    for call_id in _settled_claims(raw):
        found = open_calls.get(call_id)
        if found is not None and found[0].name in server_tools:
            raise Rejected(f"messages[{index}]: the result of {found[0].name!r} call {call_id!r} comes from the "
                           "server; a client cannot supply it")


def _adopt(message: Message, history: Sequence[Message], taken: set[str]) -> str | None:
    """The id of the server's assistant message this client copy stands for, if any."""
    calls = {p.tool_call_id for p in message.parts if isinstance(p, ToolPart)}
    text = _text(message)
    for candidate in reversed(history):
        if candidate.role != "assistant" or candidate.id in taken:
            continue
        if calls and calls & {p.tool_call_id for p in candidate.parts if isinstance(p, ToolPart)}:
            return candidate.id
        if text and _text(candidate) and (text == _text(candidate) or text.startswith(_text(candidate))):
            return candidate.id
    return None
