"""Typed Python signatures rendered from JSON Schemas, for the `execute` tool's description.

`tools.get_weather(city: str, units: str = ...) -> Any` tells a model how to call a tool from
code better than the schema does; optional parameters show `= ...` (their default is the tool's).
"""

from __future__ import annotations

from typing import Any

from think.messages import JSONObject

_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def py_type(schema: Any) -> str:
    """A Python annotation for a JSON Schema (`Any` when it says nothing usable)."""
    if not isinstance(schema, dict):
        return "Any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return "Literal[" + ", ".join(repr(v) for v in schema["enum"][:12]) + "]"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(dict.fromkeys(py_type(s) for s in schema[key])) or "Any"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(py_type({**schema, "type": k}) for k in kind) or "Any"
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        return f"list[{py_type(schema.get('items'))}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        return f"dict[str, {py_type(extra)}]" if isinstance(extra, dict) else "dict"
    return "Any"


def parameters(schema: JSONObject) -> list[tuple[str, str, bool]]:
    """`(name, annotation, required)` of an object schema's properties, required ones first."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return []
    required = set(schema.get("required") or ())
    out = [(str(name), py_type(sub), name in required) for name, sub in props.items()]
    return sorted(out, key=lambda p: not p[2])


def render(qualified: str, schema: JSONObject, returns: str = "Any") -> str:
    """`qualified(a: int, b: str = ...) -> returns`; keyword-only when there are optional ones."""
    parts = [f"{name}: {annotation}" + ("" if required else " = ...")
             for name, annotation, required in parameters(schema)]
    return f"{qualified}({', '.join(parts)}) -> {returns}"


def first_line(text: str, limit: int = 160) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"
