"""Reconciling the transcript a client sends with every chat request against the server's.

The stock client resends its whole transcript each time; the server's copy is authoritative.
What the client may contribute are new user messages. So, for each incoming message:

* an id the server has (on any branch, or the reply streaming now): the server's copy stands.
  Stale client states (a tool part the client still shows waiting) need nothing more. A client
  copy that claims a result for an open call that a client could not answer (a server tool's,
  for one) is a forgery and refused; so is an id the server has under another role.
* an assistant message with an id the server does not know adopts the id of the server's
  message it matches (a shared tool call id, or the same text): clients that followed a stream
  from another tab may hold such copies. One that matches nothing is refused: a client cannot add
  a reply the server did not write. A new `system` message is refused too.
* a new user message is kept: the server-only metadata keys (`channel`, `turnMetadata`) are
  stripped from it and `metadata.channel` is set to `"web"`.

Messages the server already has are never read in full, so a long transcript costs little: the
leading run of the request whose ids are the server's path in order (the usual case: the client
resends what it was sent, plus its new message) is matched with one list comparison against the
path's id index and its roles checked in one (`check_known_run`); what follows that run is matched
id by id. The rules are the same either way.
What a client may claim is decided in `think.turns.trust`; this module maps the transcript.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from think.messages import SETTLED_TOOL_STATES, Message, ToolPart
from think.protocol.transcript import LazyMessages
from think.sessions.session import Session
from think.turns.trust import (
    ToolKinds,
    check_claims,
    check_files,
    check_known,
    check_known_run,
    check_new,
    from_web,
)

_RECENT = 16


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


def _text(message: Message) -> str:
    return message.text


def reconcile(incoming: Sequence[Message], session: Session, *, kinds: ToolKinds,
              in_flight: str | None = None, reserved: Sequence[str] = ()) -> Incoming:
    """Check and map a client's transcript against `session` (see the module docstring).

    `kinds` says which tools a client answers for; `in_flight` is the id of the reply streaming
    now (not saved yet). Raises `Refused`.
    """
    lazy = incoming if isinstance(incoming, LazyMessages) else LazyMessages.of(incoming)
    out = Incoming()
    history = session.history()
    open_calls: dict[str, ToolPart] = {}  # server parts that may still get a result
    for message in history[-_RECENT:] + session.unsettled():
        for part in message.parts:
            if isinstance(part, ToolPart) and part.state not in SETTLED_TOOL_STATES:
                open_calls[part.tool_call_id] = part
    adopted: set[str] = set()
    ids = _known_run(lazy, session)
    start = len(ids)
    if start:
        check_known_run(0, ids, lazy.roles(start), session.history_roles()[:start])
        if open_calls:
            for index in range(start):
                if lazy.role_at(index) == "assistant":
                    check_claims(lazy.raw[index], index, open_calls, kinds)
        out.ids.extend(ids)
    for index in range(start, len(lazy)):
        message_id, role = lazy.id_at(index), lazy.role_at(index)
        known = session.get(message_id) or session.get_message(message_id)
        if known is None and message_id == in_flight and role == "assistant":
            out.ids.append(message_id)
            continue
        if known is not None:
            check_known(index, message_id, stored_role=known.role, role=role)
            if role == "assistant" and open_calls:
                check_claims(lazy.raw[index], index, open_calls, kinds)
            out.ids.append(message_id)
            continue
        message = lazy[index]
        match = _adopt(message, history, adopted) if role == "assistant" else None
        check_new(index, message_id, role=role, adopted=match)
        if match is not None:
            adopted.add(match)
            out.ids.append(match)
            continue
        check_files(index, message)
        out.fresh.append(from_web(message, reserved))
        out.ids.append(message_id)
    return out


def _known_run(lazy: LazyMessages, session: Session) -> list[str]:
    """The ids of the leading messages of the request that are, id for id, the start of the
    server's path (none when the path in memory is not the whole conversation)."""
    if session.windowed:
        return []
    path = session.history_ids()
    count = min(len(lazy), len(path))
    ids = lazy.ids(count)
    if ids == path[:count]:
        return ids
    same = next(i for i, (a, b) in enumerate(zip(ids, path, strict=False)) if a != b)
    return ids[:same]


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
