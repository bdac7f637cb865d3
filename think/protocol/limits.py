"""How deeply a JSON value may nest: one limit (`MAX_DEPTH`), one check (`check_depth`).

Every encoder and decoder on the way out has a nesting limit of its own: orjson (the server's
frames, what SQLite stores, the Python client's requests) refuses more than 254 levels, pydantic's
JSON parser (stored messages read back, the Python client's `get-messages`) more than 200, and a
browser's `JSON.stringify` a few thousand. A value nested past one of them, once accepted, would
make every later connect, read or restart fail. So everything that enters from outside is held to
one limit far below all of them, at the point where it enters, and deeper input is refused with
an error that names the limit; nothing is changed.

**Depth** counts arrays and objects: a string, number, boolean or null is 0 levels deep, `[]`,
`{}` and `[1, 2]` are 1, `{"a": [1]}` is 2. A value is measured as the unit it is kept in:

* a message (a UIMessage object) as a whole: its `metadata` may nest `MAX_DEPTH - 1` levels, a
  field of one of its parts (a tool's `input` or `output`, a data part's `data`) `MAX_DEPTH - 3`
  (`IN_PART` levels are the message, its `parts` array and the part);
* the agent's state as a whole;
* each argument of an RPC call, and an RPC result;
* each client tool schema, and the custom body of a chat request.

The frames around these values add a few levels at most, so whatever is accepted can always be
stored, sent to every client, sent back by them and read again after a restart.
"""

from __future__ import annotations

from typing import Any

from think.errors import ProtocolError

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects accepted in a value (see the module docstring)."""
IN_PART = 3
"""Levels above a field of a message part: the message, its `parts` array and the part."""

_CONTAINERS = (dict, list, tuple)


class TooDeep(ProtocolError, ValueError):
    """A value nests arrays and objects deeper than `MAX_DEPTH` allows; nothing was changed."""


def json_depth(value: Any, *, stop: int = MAX_DEPTH) -> int:
    """How many levels of arrays and objects `value` nests (see the module docstring).

    Counting stops once it passes `stop` (the result is then `stop + 1`), so an enormous or
    self-containing value costs no more than it takes to find that it is too deep.
    """
    if value.__class__ is dict:  # flat: most values, and every streamed delta (no list is built for those)
        for child in value.values():
            if isinstance(child, _CONTAINERS):
                break
        else:
            return 1
    elif not isinstance(value, _CONTAINERS):
        return 0
    pending: list[tuple[Any, int]] = [(child, 2) for child in (value.values() if isinstance(value, dict) else value)
                                      if isinstance(child, _CONTAINERS)]
    if not pending:
        return 1
    deepest = 1
    while pending:
        node, level = pending.pop()
        if level > deepest:
            deepest = level
            if deepest > stop:
                return deepest
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, _CONTAINERS):
                pending.append((child, level + 1))
    return deepest


def check_depth(value: Any, what: str, *, at: int = 0) -> None:
    """Raise `TooDeep` when `value`, kept `at` levels deep inside its unit, passes `MAX_DEPTH`.

    `what` names the value in the error (`"state"`, `"args[0]"`, `"output"`); `at` is `IN_PART`
    for a field of a message part, 0 for a unit of its own.
    """
    allowed = MAX_DEPTH - at
    if json_depth(value, stop=allowed) <= allowed:
        return
    if at:
        raise TooDeep(f"{what} is nested too deeply: more than {allowed} levels of arrays and objects, which "
                      f"with the {at} levels of the message around it passes the limit of {MAX_DEPTH}")
    raise TooDeep(f"{what} is nested too deeply: more than {MAX_DEPTH} levels of arrays and objects "
                  f"(the limit is {MAX_DEPTH})")


def chunk_within_limit(chunk: dict[str, Any]) -> dict[str, Any] | None:
    """A UI message chunk of a turn as it may enter the reply: `chunk` itself when what it adds
    to its message stays within the limit (its fields land in a part, `IN_PART - 1` levels
    below the message); otherwise a tool output or input becomes a `tool-output-error` /
    `tool-input-error` saying why, a data part or a preliminary output is dropped (None), and any
    other chunk keeps only its plain fields (ids, text, URLs; its metadata objects are left out),
    so the stream keeps its shape.

    Tools, tool inputs and data parts are checked before they become chunks; this is the last
    guard for what a model stream itself carries (provider metadata, provider-executed tools).
    """
    at = IN_PART - 1
    if json_depth(chunk, stop=MAX_DEPTH - at) <= MAX_DEPTH - at:  # the common case, on every chunk
        return chunk
    try:
        check_depth(chunk, f"A {chunk.get('type')} chunk", at=at)
    except TooDeep as exc:
        kind, call_id = chunk.get("type"), chunk.get("toolCallId")
        if kind == "tool-output-available" and not chunk.get("preliminary"):
            return {"type": "tool-output-error", "toolCallId": call_id, "errorText": str(exc)}
        if kind == "tool-input-available":
            return {"type": "tool-input-error", "toolCallId": call_id, "toolName": chunk.get("toolName"),
                    "input": None, "errorText": str(exc)}
        if kind == "tool-output-available" or str(kind).startswith("data-"):
            return None
        return {key: value for key, value in chunk.items() if not isinstance(value, _CONTAINERS)}
    return chunk
