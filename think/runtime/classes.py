"""Agent classes by path: how a restarted process finds the class of an agent it did not start.

Rows that outlive a process (alarms, a parent's children) store `module:qualname`; loading it
imports the module. Classes defined in `__main__` or inside functions cannot be found this way.
"""

from __future__ import annotations

import importlib
from typing import Any

from think.runtime.agent import Agent


def class_path(cls: type[Agent]) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def load_class(path: str) -> type[Agent] | None:
    """The `Agent` subclass at `module:qualname`, or None (not importable, or not an agent)."""
    module_name, _, qualname = path.partition(":")
    if not module_name or not qualname or "<locals>" in qualname:
        return None
    try:
        target: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
    except Exception:
        return None
    return target if isinstance(target, type) and issubclass(target, Agent) else None
