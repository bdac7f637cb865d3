"""An extension's source as sandbox programs: what it declares, and one call of a tool or hook.

The source is Python module text (the sandbox's subset) that defines

    tools = {"<name>": {"description": "…", "parameters": {JSON Schema}, "execute": fn}}
    hooks = {"before_turn": fn, …}        # optional

where `fn(args_or_snapshot, host)` returns a JSON value. Every run evaluates the source afresh in
the sandbox (no state survives between calls), then does one thing: `describe` lists the tools and
hooks it defines, `invoke` calls one function with its input and the `host` object.

The guest's `host` has a method for every host method an extension can have: a granted one
calls the sandbox namespace `granted` (the only door out, which holds the granted methods and
nothing else); one that is not granted raises `PermissionError("Extension error: permission …")`
in the guest without leaving it. Code that reaches around the `host` object finds only `granted`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from think.extensions.manifest import HOOKS, ExtensionError
from think.messages import JSONObject

NAMESPACE = "granted"
"""The sandbox namespace of the granted host methods."""
_TOOL = re.compile(r"^[A-Za-z0-9_]{1,64}$")

_DESCRIBE = '''
def __think_describe():
    try:
        found = tools
    except NameError:
        return {"error": "the source defines no `tools`: write tools = {name: {description, parameters, execute}}"}
    try:
        declared = hooks
    except NameError:
        declared = {}
    if not isinstance(found, dict):
        return {"error": "`tools` must be a dict of name to {description, parameters, execute}"}
    if not isinstance(declared, dict):
        return {"error": "`hooks` must be a dict of hook name to function"}
    out = {}
    for name, spec in found.items():
        if not isinstance(spec, dict):
            return {"error": "tool " + repr(name) + " must be a dict with description, parameters and execute"}
        out[str(name)] = {"description": spec.get("description"), "parameters": spec.get("parameters"),
                          "required": spec.get("required"), "execute": type(spec.get("execute")).__name__}
    return {"tools": out, "hooks": {str(k): type(v).__name__ for k, v in declared.items()}}
__think_describe()
'''


def describe_program(source: str) -> str:
    return f"{source}\n{_DESCRIBE}"


def invoke_program(source: str, kind: str, name: str, methods: Mapping[str, str | None]) -> str:
    """The source, the guest's `host` class, and a call of `tools[name]["execute"]` (`kind="tool"`)
    or `hooks[name]` with the input `__think_input`. `methods` maps every host method to None
    (granted) or the permission it needs."""
    lines = ["class __ThinkHost:", "    def __repr__(self):", "        return '<extension host>'"]
    for method, needs in methods.items():
        lines.append(f"    def {method}(self, *args, **kwargs):")
        if needs is None:
            lines.append(f"        return {NAMESPACE}.{method}(*args, **kwargs)")
        else:
            message = f"Extension error: permission denied: host.{method}() needs {needs}"
            lines.append(f"        raise PermissionError({message!r})")
    target = f"tools[{name!r}]['execute']" if kind == "tool" else f"hooks[{name!r}]"
    lines += ["", f"{target}(__think_input, __ThinkHost())"]
    return source + "\n" + "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    name: str
    description: str
    input_schema: JSONObject


@dataclass(frozen=True, slots=True)
class Declared:
    tools: tuple[ToolDefinition, ...]
    hooks: tuple[str, ...]


def parse_description(value: Any, declared_hooks: tuple[str, ...]) -> Declared:
    """The checked result of `describe_program`; `ExtensionError` says what is wrong."""
    import jsonschema  # only when an extension loads

    if not isinstance(value, dict):
        raise ExtensionError("the source did not describe its tools (it must end with its definitions)")
    if "error" in value:
        raise ExtensionError(f"invalid extension source: {value['error']}")
    tools: list[ToolDefinition] = []
    for name, spec in dict(value.get("tools") or {}).items():
        if not _TOOL.match(name):
            raise ExtensionError(f"tool name {name!r} is not valid: use 1-64 letters, digits or '_'")
        if spec.get("execute") != "function":
            raise ExtensionError(f"tool {name!r} has no execute function (got {spec.get('execute')})")
        description = spec.get("description")
        if not isinstance(description, str) or not description.strip():
            raise ExtensionError(f"tool {name!r} needs a description (text)")
        schema = _schema(name, spec.get("parameters"), spec.get("required"))
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ExtensionError(f"tool {name!r} has an invalid parameters schema: {exc.message}") from None
        tools.append(ToolDefinition(name, description.strip(), schema))
    if not tools:
        raise ExtensionError("invalid extension source: `tools` is empty")
    defined = dict(value.get("hooks") or {})
    for hook, kind in defined.items():
        if hook not in HOOKS:
            raise ExtensionError(f"unknown hook {hook!r}: hooks are {', '.join(HOOKS)}")
        if kind != "function":
            raise ExtensionError(f"hook {hook!r} must be a function (got {kind})")
    missing = [hook for hook in declared_hooks if hook not in defined]
    if missing:
        raise ExtensionError(f"the manifest declares hooks the source does not define: {', '.join(missing)}")
    # A hook runs when the manifest declares it; one the source defines on its own is used too.
    return Declared(tuple(tools), tuple(h for h in HOOKS if h in defined))


def _schema(tool: str, parameters: Any, required: Any) -> JSONObject:
    """A full JSON Schema object, or the original's form (a properties map plus `required`)."""
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, dict):
        raise ExtensionError(f"tool {tool!r}: parameters must be a JSON Schema object, not {type(parameters).__name__}")
    if isinstance(parameters.get("type"), str) or "properties" in parameters:  # a whole schema
        schema = dict(parameters)
        schema.setdefault("type", "object")
        if schema["type"] != "object":
            raise ExtensionError(f"tool {tool!r}: parameters must describe an object")
    else:
        schema = {"type": "object", "properties": parameters}
        if required is not None:
            schema["required"] = required
    return schema


__all__ = ["NAMESPACE", "Declared", "ToolDefinition", "describe_program", "invoke_program", "parse_description"]
