"""`execute`: the model writes a Python program that calls the agent's tools and files as functions.

    class Assistant(Think):
        def get_tools(self):
            return [get_weather, create_execute_tool(self)]

The program runs in the sandbox host (`think.sandbox.host`): a Python subset with no filesystem,
network or imports of its own, whose only way out is the namespaces it is given — `tools.*` (the
agent's server tools; client tools are left out, `needs_approval` tools pause the run durably),
`state.*` (the workspace, `think.tools.execute.state`) and any `providers`. What this package
trusts: the agent's tools and workspace (they run with the agent's rights when the code calls
them); it trusts nothing in the code. The tool's result is
`{status, ok, value, stdout, error?, execution_id, host_calls}`; an exception in the code or a
limit is a result the model reads, never a failed turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from think._lazy import lazy_exports
from think.errors import ToolFailed
from think.messages import JSONObject
from think.tools.execute.store import DEFAULT_PAUSED_TTL, MIGRATIONS, ExecutionStore
from think.tools.tool import Tool, ToolContext, as_tool_map

if TYPE_CHECKING:
    from think.sandbox.host import HostLimits
    from think.tools.execute.namespaces import Provider
    from think.tools.execute.runtime import ExecuteRuntime
    from think.workspace.workspace import Workspace

# Every agent imports this package for its executions table (`MIGRATIONS`) and callables; the
# interpreter host and the namespaces load when an `execute` tool is first made.
_HOMES = {"ExecuteRuntime": "think.tools.execute.runtime", "Provider": "think.tools.execute.namespaces"}
__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())

RUNTIME_ATTR = "execute_runtime"
_building: ContextVar[frozenset[int]] = ContextVar("think_execute_building", default=frozenset())

INPUT_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "description": "Python code; the value of its last expression is the result"},
        "snippet": {"type": "string", "description": "run a saved snippet by name instead of code"},
        "args": {"type": "object", "description": "bound as the global `args` (for snippets)"},
    },
}


def create_execute_tool(agent: Any, *, tools: Sequence[Tool] | Mapping[str, Tool] | None = None,
                        state: bool | Workspace = True, providers: Sequence[Provider] = (),
                        timeout: float = 30.0, memory: int = 64 * 1024 * 1024, max_host_calls: int = 1000,
                        max_output: int = 64_000, max_recursion: int = 200, description: str | None = None,
                        hardened: bool = False, worker_binary: str | None = None) -> Tool:
    """The `execute` tool for `agent` (see the module docs).

    `tools` defaults to the agent's `get_tools()` (without `execute` itself); `state=True` gives
    `state.*` over `agent.workspace` (a `Workspace` gives another one, False none). `timeout` is
    wall-clock seconds per run, `memory` the guest's heap in bytes. `hardened=True` runs the
    interpreter workers under bubblewrap (`think.sandbox.hardened`); `worker_binary` replaces the
    Monty worker with any other wrapper."""
    from think.sandbox.host import HostLimits, SandboxHost
    from think.tools.execute.namespaces import EXECUTE_TOOL
    from think.tools.execute.runtime import ExecuteRuntime

    if id(agent) in _building.get():  # get_tools() is being read for the namespace: not wired yet
        return Tool(name=EXECUTE_TOOL, description="Run Python code.", input_schema=INPUT_SCHEMA)
    token = _building.set(_building.get() | {id(agent)})
    try:
        tool_map = as_tool_map(tools if tools is not None else agent.get_tools())
    finally:
        _building.reset(token)
    tool_map = {name: t for name, t in tool_map.items() if name != EXECUTE_TOOL}
    if hardened and worker_binary is None:
        from think.sandbox.hardened import shared_hardened_worker

        worker_binary = shared_hardened_worker()
    workspace = agent.workspace if state is True else (state or None)
    limits = HostLimits(timeout=timeout, memory=memory, max_host_calls=max_host_calls, max_output=max_output,
                        max_recursion=max_recursion)
    runtime = ExecuteRuntime(ExecutionStore(agent.db), SandboxHost(limits, binary=worker_binary),
                             tools=lambda: tool_map, workspace=workspace, providers=tuple(providers), agent=agent)
    previous = getattr(agent, RUNTIME_ATTR, None)
    runtime.on_outcome = getattr(previous, "on_outcome", None)
    setattr(agent, RUNTIME_ATTR, runtime)
    wire = getattr(agent, "_wire_execute_runtime", None)
    if wire is not None:
        wire(runtime)

    async def execute(arguments: JSONObject, ctx: ToolContext) -> dict[str, Any]:
        code, inputs = arguments.get("code"), None
        args = arguments.get("args")
        if args is not None and not isinstance(args, dict):
            raise ToolFailed("args must be an object")
        name = arguments.get("snippet")
        if name:
            saved = runtime.store.snippet(str(name))
            if saved is None:
                known = ", ".join(s["name"] for s in runtime.store.snippets()) or "none"
                raise ToolFailed(f"no snippet named {name!r} (saved: {known})")
            code = saved[0]
        if not isinstance(code, str) or not code.strip():
            raise ToolFailed("give `code` (Python source) or `snippet` (a saved snippet's name)")
        inputs = {"args": args or {}}
        return await runtime.run(code, tool_call_id=ctx.tool_call_id or None, inputs=inputs)

    return Tool(name=EXECUTE_TOOL, description=description or _describe(runtime, limits),
                input_schema=INPUT_SCHEMA, execute=execute, recovery="rerun")


def _describe(runtime: ExecuteRuntime, limits: HostLimits) -> str:
    from think.tools.execute.namespaces import signature_lines
    from think.tools.execute.state import SIGNATURES

    spaces, exposed = runtime.namespaces()
    lines = [
        "Run a Python program in a sandbox and get its result. Use it to call several tools or file "
        "operations in one step, loop over data, and compute with the results.",
        "The language is a subset of Python 3: functions, classes, comprehensions, try/except, and the "
        "modules json, re, math, datetime, and a few more. There is no filesystem, network, os or "
        "subprocess. Host functions are synchronous (do not await them) and take keyword arguments "
        "(or one dict). The value of the last expression is returned; print() goes to stdout.",
        f"Limits: {limits.timeout:g} s, {limits.memory // (1024 * 1024)} MB, {limits.max_host_calls} host calls, "
        f"{limits.max_output} characters of output. Exceptions come back as the result's `error`.",
    ]
    if "tools" in spaces:
        lines += ["", "tools — the agent's tools:", *signature_lines("tools", spaces["tools"], exposed)]
    if "state" in spaces:
        lines += ["", "state — the workspace files (paths like /notes/a.md):",
                  *(f"- {sig}" + (f": {doc}" if doc else "") for sig, doc in SIGNATURES.values())]
    for provider in runtime.providers:
        head = f"{provider.name}" + (f" — {provider.description}" if provider.description else "")
        lines += ["", head + ":", *signature_lines(provider.name, spaces[provider.name])]
    snippets = runtime.store.snippets() if not runtime.store.db.closed else []
    if snippets:
        lines += ["", "Saved snippets (run with snippet=name, args={...}): "
                  + ", ".join(s["name"] + (f" ({s['description']})" if s["description"] else "") for s in snippets)]
    lines += ["", "A call marked (pauses for approval) stops the program until a person decides; the result is "
              "then {status: 'paused', execution_id, pending} and the outcome arrives later."]
    return "\n".join(lines)


__all__ = ["DEFAULT_PAUSED_TTL", "MIGRATIONS", "ExecuteRuntime", "Provider", "create_execute_tool"]
