"""`json_patch(old, new)`: the RFC 6902 operations that turn one JSON object into another.

For `STATE_DELTA`: objects are compared key by key (removed keys `remove`, new ones `add`,
changed ones compared again if both sides are objects, else `replace`); arrays and scalars that
differ are replaced whole. Keys are escaped as JSON Pointer requires (`~0`, `~1`).
"""

from __future__ import annotations

from typing import Any


def _pointer(path: str, key: str) -> str:
    return f"{path}/{key.replace('~', '~0').replace('/', '~1')}"


def json_patch(old: dict[str, Any], new: dict[str, Any], path: str = "") -> list[dict[str, Any]]:
    """The operations that make `old` into `new` (empty when they are equal)."""
    ops: list[dict[str, Any]] = []
    for key in old:
        if key not in new:
            ops.append({"op": "remove", "path": _pointer(path, key)})
    for key, value in new.items():
        where = _pointer(path, key)
        if key not in old:
            ops.append({"op": "add", "path": where, "value": value})
        elif isinstance(old[key], dict) and isinstance(value, dict):
            ops.extend(json_patch(old[key], value, where))
        elif old[key] != value or type(old[key]) is not type(value):
            ops.append({"op": "replace", "path": where, "value": value})
    return ops
