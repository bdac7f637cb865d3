"""Values crossing the sandbox boundary, as JSON values of a bounded size.

Whatever the guest hands over (call arguments, the run's value) is converted before anything else
sees it: tuples and sets become lists, paths and other objects their `str`, dict keys strings,
and non-finite floats strings. Nothing deeper than `MAX_DEPTH` is accepted.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

MAX_DEPTH = 64


class ValueTooLarge(ValueError):
    """A value nested deeper than `MAX_DEPTH`."""


def to_json(value: Any, depth: int = 0) -> Any:
    """`value` as plain JSON data (see the module docs)."""
    if depth > MAX_DEPTH:
        raise ValueTooLarge(f"a value is nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): to_json(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [to_json(v, depth + 1) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode()}
    return str(value)


def cap_value(value: Any, limit: int) -> Any:
    """The guest's return value as JSON; over `limit` characters of JSON it becomes a preview
    string that says so (the model sees that it was cut, never a silently partial value)."""
    data = to_json(value)
    text = json.dumps(data, ensure_ascii=False)
    if len(text) <= limit:
        return data
    return f"{text[: max(0, limit - 80)]}… (truncated: the value is {len(text)} characters as JSON, over {limit})"
