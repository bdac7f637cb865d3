"""The model's tools for extensions: `load_extension` (write one at run time) and `list_extensions`.

`load_extension` builds a manifest from the model's arguments (the permissions it asks for are the
ones it gets: `workspace_access`, `network` host patterns) and loads the source; its tools are the
model's from the next turn. Loading code that can change things or reach the network waits for a
person's approval by default (`needs_approval="auto"`); True asks for every load, False never.
"""

from __future__ import annotations

from typing import Any, Literal

from think.errors import ToolFailed
from think.extensions.manager import ExtensionManager
from think.extensions.manifest import ExtensionError, ExtensionManifest
from think.messages import JSONObject
from think.tools.tool import Tool, ToolContext

LOAD_DESCRIPTION = """Load an extension: Python code (a safe subset, run in a sandbox) that adds tools.
The source defines `tools = {"<name>": {"description": "…", "parameters": {JSON Schema of an object},
"execute": fn}}`, where `fn(args, host)` returns a JSON value; optionally `hooks`. The sandbox has no
imports beyond a small standard library, no files and no network: `host` offers only what you ask for
here: workspace_access "read" gives host.read_file(path), host.list_files(path);
"read-write" also host.write_file(path, content), host.delete_file(path); network (host patterns
such as "api.example.com") gives host.fetch(url, method, headers, body) -> {status, text, headers}.
The new tools are named <name>_<tool> and can be called from the next turn."""

_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The extension's name; its tools are prefixed with it."},
        "version": {"type": "string", "description": "A version, such as 1.0.0."},
        "description": {"type": "string"},
        "source": {"type": "string", "description": "The Python source (see the description)."},
        "workspace_access": {"type": "string", "enum": ["none", "read", "read-write"]},
        "network": {"type": "array", "items": {"type": "string"},
                    "description": "Host patterns host.fetch may reach; omit for no network."},
    },
    "required": ["name", "source"],
}


def _manifest(arguments: JSONObject) -> ExtensionManifest:
    network = arguments.get("network") or False
    return ExtensionManifest.parse({
        "name": arguments.get("name"), "version": arguments.get("version") or "0.1.0",
        "description": arguments.get("description") or "",
        "permissions": {"workspace": arguments.get("workspace_access") or "none", "network": network}})


def _risky(arguments: JSONObject) -> bool:
    return bool(arguments.get("network")) or arguments.get("workspace_access") == "read-write"


def create_extension_tools(manager: ExtensionManager, *,
                           needs_approval: bool | Literal["auto"] = "auto") -> dict[str, Tool]:
    """`load_extension` and `list_extensions` over `manager` (see the module docs)."""

    async def load(arguments: JSONObject, ctx: ToolContext) -> JSONObject:
        try:
            manifest = _manifest(arguments)
            loaded = await manager.load(manifest, str(arguments.get("source") or ""))
        except ExtensionError as exc:
            raise ToolFailed(str(exc)) from None
        return {"loaded": True, "name": manifest.name, "prefix": manifest.prefix, "version": manifest.version,
                "tools": list(loaded.tools),
                "message": f"Loaded {manifest.name}: {', '.join(loaded.tools)} can be called from the next turn."}

    async def list_all(arguments: JSONObject, ctx: ToolContext) -> list[JSONObject]:
        return manager.list()

    approval: Any = _risky if needs_approval == "auto" else bool(needs_approval)
    return {
        "load_extension": Tool(name="load_extension", description=LOAD_DESCRIPTION, input_schema=_SCHEMA,
                               execute=load, needs_approval=approval),
        "list_extensions": Tool(name="list_extensions", description="The loaded extensions and their tools.",
                                input_schema={"type": "object", "properties": {}}, execute=list_all),
    }


__all__ = ["create_extension_tools"]
