"""Token estimates without a tokenizer: the heuristic the original uses.

Per string `max(chars / 4, words * 1.3)`, rounded up; per message its texts, reasoning, tool
inputs and outputs, plus 4. Estimates decide when to compact and fill the usage figures of
context blocks; they are not billing numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import orjson

from think.messages import FilePart, Message, ReasoningPart, TextPart, ToolPart

TokenCounter = Callable[[Message], int]
"""Tokens of one message. Counted once per message as it is added, so a turn's cost stays flat."""


def estimate_tokens(text: str) -> int:
    """Tokens in a string: `max(chars / 4, words * 1.3)`, rounded up."""
    if not text:
        return 0
    return math.ceil(max(len(text) / 4, len(text.split()) * 1.3))


def estimate_message_tokens(message: Message) -> int:
    """Tokens in a message: its texts, reasoning, tool inputs and outputs, plus 4."""
    total = 4
    for part in message.parts:
        if isinstance(part, TextPart | ReasoningPart):
            total += estimate_tokens(part.text)
        elif isinstance(part, ToolPart):
            total += estimate_tokens(part.name) + _json_tokens(part.input)
            total += estimate_tokens(part.error_text) if part.error_text else _json_tokens(part.output)
        elif isinstance(part, FilePart):
            total += 256 + estimate_tokens(part.filename or "")  # media: a flat guess, never the data URL
    return total


def _json_tokens(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return estimate_tokens(value)
    return estimate_tokens(orjson.dumps(value, default=str).decode())
