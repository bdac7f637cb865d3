"""`tools.*` and provider namespaces: what the sandboxed code may call, as host functions.

The original's rule for `tools.*`: only tools that run on the server are exposed (a client tool
has no `execute` here, so it is left out: the code could never get its answer); a tool with
`needs_approval` (True or a function of the input) pauses the execution at that call until
`approve_execution` / `reject_execution`. The `execute` tool itself is never exposed.

Every call is validated before the tool runs: the tool's own `validate_input` (what `@tool`
builds from the signature) and the JSON Schema of its input. A failing tool is an exception in
the guest, never in the host.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from think.errors import ConfigurationError
from think.sandbox.host import HostCallRefused, HostFunction
from think.tools.execute.signatures import first_line, render
from think.tools.run import run_tool
from think.tools.tool import InvalidToolInput, Tool, ToolContext

EXECUTE_TOOL = "execute"


@dataclass(frozen=True)
class Provider:
    """An extra namespace of host functions: `Provider("crm", {"find": find_customer})` lets the
    code call `crm.find(name="Ada")`. A function gets the call's arguments as keywords and may be
    async; `needs_approval` names the functions whose calls pause for a person."""

    name: str
    functions: Mapping[str, Callable[..., Any] | HostFunction]
    needs_approval: frozenset[str] = field(default_factory=frozenset)
    description: str = ""


def python_name(tool_name: str) -> str:
    """A tool name as a Python identifier (`get-weather` → `get_weather`)."""
    name = re.sub(r"\W", "_", tool_name)
    name = name.lstrip("_") or "tool"
    return f"t_{name}" if name[0].isdigit() else name


def tool_namespace(tools: Mapping[str, Tool], context: Callable[[str, str], ToolContext]
                   ) -> tuple[dict[str, HostFunction], dict[str, Tool]]:
    """The `tools` namespace and, by Python name, the tools it exposes. `context(tool, seq_hint)`
    builds the ToolContext of one call."""
    functions: dict[str, HostFunction] = {}
    exposed: dict[str, Tool] = {}
    for tool in tools.values():
        if tool.is_client_tool or tool.name == EXECUTE_TOOL:
            continue
        name = python_name(tool.name)
        if name in exposed:
            raise ConfigurationError(f"tools {exposed[name].name!r} and {tool.name!r} are both "
                                     f"`tools.{name}` in execute: rename one of them")
        exposed[name] = tool
        functions[name] = _tool_function(tool, context)
    return functions, exposed


def _tool_function(tool: Tool, context: Callable[[str, str], ToolContext]) -> HostFunction:
    import jsonschema  # ~0.1 s to import: only when an execute tool is built, not with every agent

    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    validator = jsonschema.Draft202012Validator(schema) if schema else None
    params = tuple((schema.get("properties") or {}).keys())

    def checked(arguments: dict[str, Any]) -> dict[str, Any]:
        if validator is not None:
            error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path)
                raise HostCallRefused(f"tools.{python_name(tool.name)}: invalid arguments"
                                      f"{f' at {where}' if where else ''}: {error.message}", "TypeError")
        try:
            return tool.check_input(arguments)
        except InvalidToolInput as exc:
            raise HostCallRefused(f"tools.{python_name(tool.name)}: {exc}", "TypeError") from exc

    async def call(arguments: dict[str, Any]) -> Any:
        result = await run_tool(tool, checked(arguments), context(tool.name, ""))
        if result.is_error:
            raise HostCallRefused(result.error or "the tool failed", "RuntimeError")
        return result.output

    async def needs_approval(arguments: dict[str, Any]) -> bool:
        return await tool.requires_approval(checked(arguments))

    return HostFunction(call, params, needs_approval if tool.needs_approval else None,
                        description=first_line(tool.description), rerun=tool.recovery == "rerun")


def provider_namespace(provider: Provider) -> dict[str, HostFunction]:
    functions: dict[str, HostFunction] = {}
    for name, fn in provider.functions.items():
        if isinstance(fn, HostFunction):
            functions[name] = fn
            continue
        functions[name] = _plain_function(fn, name in provider.needs_approval)
    return functions


def _plain_function(fn: Callable[..., Any], approval: bool) -> HostFunction:
    try:
        params = tuple(p.name for p in inspect.signature(fn).parameters.values()
                       if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    except (TypeError, ValueError):
        params = ()

    async def call(arguments: dict[str, Any]) -> Any:
        try:
            result = fn(**arguments)
        except TypeError as exc:
            raise HostCallRefused(str(exc), "TypeError") from exc
        return await result if inspect.isawaitable(result) else result

    async def always(arguments: dict[str, Any]) -> bool:
        return True

    return HostFunction(call, params, always if approval else None, description=first_line(fn.__doc__ or ""))


def signature_lines(namespace: str, functions: Mapping[str, HostFunction],
                    tools: Mapping[str, Tool] | None = None) -> list[str]:
    """One line per function: its typed signature and what it does."""
    lines = []
    for name, function in functions.items():
        tool = (tools or {}).get(name)
        if tool is not None:
            sig = render(f"{namespace}.{name}", tool.input_schema)
            note = " (pauses for approval)" if tool.needs_approval else ""
        else:
            sig = f"{namespace}.{name}({', '.join(function.params)}) -> Any"
            note = " (pauses for approval)" if function.needs_approval else ""
        text = f"{function.description}{note}".strip()
        lines.append(f"- {sig}" + (f": {text}" if text else ""))
    return lines
