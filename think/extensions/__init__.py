"""Extensions: tool bundles (with hooks and context blocks) loaded at run time, sandboxed.

An extension is a manifest (`ExtensionManifest`: name, version, permissions, context blocks,
hooks) and Python source that defines `tools = {name: {description, parameters, execute}}`. The
developer ships them (`Think.get_extensions()`) or the model writes them (`create_extension_tools`).

What this package trusts: the developer's collaborators it is handed (the workspace, the session's
context blocks and messages, the network options) and its own rows in the agent's database. It
trusts nothing in a manifest or a source: manifests are validated (pydantic), sources run only in
the sandbox host (`think.sandbox.host`), whose host functions are the only way out, and those are
exactly the methods the manifest grants (`think.extensions.capabilities`). `host.fetch` goes
through the one URL policy (`think.net`) with the grant's host patterns, on every request,
redirect and connection.

    manager = create_extension_manager(agent.db, workspace=agent.workspace, session=agent.session)
    await manager.load({"name": "notes", "permissions": {"workspace": "read"}}, SOURCE)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from think._lazy import lazy_exports

if TYPE_CHECKING:
    from think.extensions.capabilities import NetworkOptions
    from think.extensions.factory import create_extension_manager
    from think.extensions.manager import DEFAULT_LIMITS, HOOK_TIMEOUT, Extension, ExtensionManager, LoadedExtension
    from think.extensions.manifest import ExtensionError, ExtensionManifest, sanitize_name
    from think.extensions.store import MIGRATIONS
    from think.extensions.tools import create_extension_tools

__all__ = ["DEFAULT_LIMITS", "HOOK_TIMEOUT", "MIGRATIONS", "Extension", "ExtensionError", "ExtensionManager",
           "ExtensionManifest", "LoadedExtension", "NetworkOptions", "create_extension_manager",
           "create_extension_tools", "sanitize_name"]

_HOMES = {"create_extension_manager": "think.extensions.factory", "MIGRATIONS": "think.extensions.store",
          "NetworkOptions": "think.extensions.capabilities", "create_extension_tools": "think.extensions.tools",
          **{name: "think.extensions.manager" for name in (
              "DEFAULT_LIMITS", "HOOK_TIMEOUT", "Extension", "ExtensionManager", "LoadedExtension")},
          **{name: "think.extensions.manifest" for name in ("ExtensionError", "ExtensionManifest", "sanitize_name")}}

# The manager, sandbox and network modules load on first use, not with every agent.
__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())
