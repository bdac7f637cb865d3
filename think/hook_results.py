"""What a hook returned, as the typed result the loop runs on.

The typed results (`Allow`, `Block`, `Substitute`, `TurnConfig`, `StepConfig`) pass through. A plain
dict, the natural port of the original's TypeScript objects (`{"action": "block", "reason": …}`,
`{"model": …, "active_tools": […]}`), is checked and converted: keys in snake_case or camelCase,
simple values checked by type. Anything else raises `TypeError` naming the hook and the type it
expects; the caller turns that into the call's error (`before_tool_call`) or the turn's error
(`before_turn`, `before_step`), so a wrong result never leaves a stream half-finished.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from think.hooks import Allow, Block, StepConfig, Substitute, ToolDecision, TurnConfig

_Config = TypeVar("_Config", TurnConfig, StepConfig)

_SIMPLE: dict[str, tuple[type, ...]] = {
    "system": (str,), "max_steps": (int,), "send_reasoning": (bool,), "max_output_tokens": (int,),
    "temperature": (int, float), "top_p": (int, float), "top_k": (int,), "presence_penalty": (int, float),
    "frequency_penalty": (int, float), "seed": (int,), "timeout": (int, float), "max_retries": (int,),
    "stream_stall_timeout_ms": (int,), "stream_stall_timeout": (int, float), "provider_options": (dict,),
    "headers": (Mapping,),
}
_NAMES = ("active_tools", "stop_sequences")


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def tool_decision(value: object) -> ToolDecision | None:
    """`before_tool_call`'s result: None, a `ToolDecision`, or `{"action": "allow"|"block"|"substitute", …}`."""
    if value is None or isinstance(value, Allow | Block | Substitute):
        return value
    expected = ("before_tool_call must return None, Allow, Block, Substitute or a dict "
                "{'action': 'allow'|'block'|'substitute', …} (a ToolDecision)")
    if not isinstance(value, Mapping):
        raise TypeError(f"{expected}, not {type(value).__name__}")
    fields = dict(value)
    action = fields.pop("action", None)
    allowed = {"allow": {"input"}, "block": {"reason"}, "substitute": {"output", "input"}}.get(str(action))
    if allowed is None:
        raise TypeError(f"{expected}; got action {action!r}")
    if unknown := set(fields) - allowed:
        raise TypeError(f"{expected}; {action!r} takes {sorted(allowed)}, not {sorted(unknown)}")
    given = fields.get("input")
    if given is not None and not isinstance(given, dict):
        raise TypeError(f"{expected}; 'input' must be a dict, not {type(given).__name__}")
    if action == "allow":
        return Allow(input=given)
    if action == "block":
        reason = fields.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise TypeError(f"{expected}; 'reason' must be a string, not {type(reason).__name__}")
        return Block(reason)
    if "output" not in fields:
        raise TypeError(f"{expected}; 'substitute' needs an 'output'")
    return Substitute(fields["output"], input=given)


def turn_config(value: object) -> TurnConfig | None:
    """`before_turn`'s result: None, a `TurnConfig`, or a dict of its fields."""
    return _config(value, TurnConfig, "before_turn")


def step_config(value: object) -> StepConfig | None:
    """`before_step`'s result: None, a `StepConfig`, or a dict of its fields."""
    return _config(value, StepConfig, "before_step")


def _config(value: object, cls: type[_Config], hook: str) -> _Config | None:
    if value is None or isinstance(value, cls):
        return value
    expected = f"{hook} must return None, a {cls.__name__} or a dict of its fields"
    if not isinstance(value, Mapping):
        raise TypeError(f"{expected}, not {type(value).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    fields: dict[str, Any] = {}
    for key, item in value.items():
        name = _snake(str(key)) if str(key) not in names else str(key)
        if name not in names:
            raise TypeError(f"{expected}; {key!r} is not one of its fields ({', '.join(sorted(names))})")
        _check(expected, name, item)
        fields[name] = item
    return cls(**fields)


def _check(expected: str, name: str, item: object) -> None:
    if item is None:
        return
    types = _SIMPLE.get(name)
    if types is not None and (not isinstance(item, types) or (bool not in types and isinstance(item, bool))):
        raise TypeError(f"{expected}; {name!r} must be {' or '.join(t.__name__ for t in types)}, "
                        f"not {type(item).__name__}")
    if name in _NAMES and (isinstance(item, str) or not isinstance(item, Sequence)
                           or not all(isinstance(n, str) for n in item)):
        raise TypeError(f"{expected}; {name!r} must be a list of strings, not {type(item).__name__}")
    if name == "model":
        from think.models.base import Model

        if not isinstance(item, str | Model):
            raise TypeError(f"{expected}; 'model' must be a Model or a model id string, not {type(item).__name__}")
