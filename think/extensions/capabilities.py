"""The host methods an extension's manifest grants, as sandbox host functions.

`granted_functions` returns only what the permissions allow; `host_methods` says, for every
method an extension could have, whether it is granted or which permission it needs (the guest's
`host` object raises "Extension error: permission …" for those). Each method checks its
arguments again on the host side (labels, sizes): the guest's arguments are untrusted JSON.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from think.errors import ContextError
from think.extensions.blocks import ExtensionBlocks
from think.extensions.manifest import ExtensionManifest, Permissions
from think.sandbox.host import HostCallRefused, HostFunction
from think.workspace.errors import WorkspaceError

if TYPE_CHECKING:
    from think.messages import Message
    from think.net.resolver import Resolver
    from think.workspace.workspace import Workspace

MAX_MESSAGES = 100
MAX_MESSAGE_CHARS = 20_000


@dataclass(frozen=True, kw_only=True)
class NetworkOptions:
    """How extension requests reach the network (the developer's settings, never the manifest's)."""

    resolver: Resolver | None = None
    """Host name lookups (None: the system's)."""
    allow_private_networks: bool | Sequence[str] = False
    """As `UrlPolicy`'s: networks (`["10.1.0.0/16"]`) extensions may reach besides public ones."""
    timeout: float = 15.0
    """Seconds one `host.fetch` may take, redirects included."""
    max_bytes: int = 1_000_000
    """Bytes of a response body kept (the rest is dropped and `truncated` set)."""



@dataclass(frozen=True, kw_only=True)
class ExtensionEnvironment:
    """What extensions may be given access to: each is None when the agent offers none."""

    workspace: Workspace | None = None
    blocks: ExtensionBlocks | None = None
    """The session's context blocks, as extensions see them."""
    messages: Callable[[], Sequence[Message]] | None = None
    send_message: Callable[[str], Awaitable[None]] | None = None
    network: NetworkOptions = field(default_factory=NetworkOptions)
    taken_names: Callable[[], Collection[str]] | None = None
    """The names of the agent's other tools: an extension's tool may not take one (it would
    replace that tool, and whatever approval it needs, with code nobody reviewed)."""


_READ = "permissions.workspace 'read' or 'read-write'"
_WRITE = "permissions.workspace 'read-write'"
_NEEDS = {"read_file": _READ, "list_files": _READ, "write_file": _WRITE, "delete_file": _WRITE,
          "get_context": "a context read grant (permissions.context.read)",
          "set_context": "a context write grant (permissions.context.write)",
          "get_messages": "permissions.messages 'read'", "get_session_info": "permissions.messages 'read'",
          "send_message": "permissions.session.send_message",
          "fetch": "a network grant (permissions.network: host patterns)"}
HOST_METHODS = tuple(_NEEDS)


def _granted_names(p: Permissions) -> set[str]:
    names: set[str] = set()
    if p.workspace in ("read", "read-write"):
        names |= {"read_file", "list_files"}
    if p.workspace == "read-write":
        names |= {"write_file", "delete_file"}
    if p.context.read:
        names.add("get_context")
    if p.context.write:
        names.add("set_context")
    if p.messages == "read":
        names |= {"get_messages", "get_session_info"}
    if p.session.send_message:
        names.add("send_message")
    if p.hosts:
        names.add("fetch")
    return names


def host_methods(manifest: ExtensionManifest) -> dict[str, str | None]:
    """Every host method: None when granted, else the permission it needs."""
    granted = _granted_names(manifest.permissions)
    return {name: None if name in granted else needs for name, needs in _NEEDS.items()}


def granted_functions(manifest: ExtensionManifest, env: ExtensionEnvironment) -> dict[str, HostFunction]:
    """The sandbox functions of the granted methods; a granted method whose collaborator the
    agent lacks (no workspace, say) is left out, so it fails as not available."""
    granted = _granted_names(manifest.permissions)
    out: dict[str, HostFunction] = {}
    if env.workspace is not None:
        out.update(_workspace(env.workspace))
    if env.blocks is not None:
        out.update(_context(manifest, env.blocks))
    if env.messages is not None:
        out.update(_messages(env.messages))
    if env.send_message is not None:
        out.update(_send(env.send_message))
    if manifest.permissions.hosts:
        from think.extensions.network import fetch_function  # httpx: with the first network grant

        out["fetch"] = fetch_function(manifest.permissions.hosts, env.network)
    return {name: fn for name, fn in out.items() if name in granted}


def _text(args: dict[str, Any], name: str, *, limit: int | None = None) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise HostCallRefused(f"{name} must be text", "TypeError")
    if limit is not None and len(value) > limit:
        raise HostCallRefused(f"{name} is longer than {limit} characters", "ValueError")
    return value


def _workspace_errors(fn: Callable[[dict[str, Any]], Awaitable[Any]]) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    async def call(args: dict[str, Any]) -> Any:
        try:
            return await fn(args)
        except WorkspaceError as exc:
            raise HostCallRefused(str(exc), "OSError") from exc

    return call


def _workspace(ws: Workspace) -> dict[str, HostFunction]:
    async def read_file(args: dict[str, Any]) -> str | None:
        return await ws.read_file(_text(args, "path"))

    async def list_files(args: dict[str, Any]) -> list[dict[str, Any]]:
        return [entry.to_json() for entry in await ws.list(str(args.get("path") or "/"))]

    async def write_file(args: dict[str, Any]) -> bool:
        await ws.write_file(_text(args, "path"), _text(args, "content"))
        return True

    async def delete_file(args: dict[str, Any]) -> bool:
        path = _text(args, "path")
        if not await ws.exists(path):
            return False
        await ws.rm(path)
        return True

    return {"read_file": HostFunction(_workspace_errors(read_file), ("path",)),
            "list_files": HostFunction(_workspace_errors(list_files), ("path",)),
            "write_file": HostFunction(_workspace_errors(write_file), ("path", "content")),
            "delete_file": HostFunction(_workspace_errors(delete_file), ("path",))}


def _context(manifest: ExtensionManifest, blocks: ExtensionBlocks) -> dict[str, HostFunction]:
    grant = manifest.permissions.context
    prefix = manifest.prefix
    own = {f"{prefix}_{spec.label}" for spec in manifest.context}

    def label_of(args: dict[str, Any]) -> str:
        label = _text(args, "label", limit=200)
        return f"{prefix}_{label}" if f"{prefix}_{label}" in own else label

    def may_write(label: str) -> bool:
        return (grant.write == "own" and label in own) or (isinstance(grant.write, list) and any(
            label in (w, f"{prefix}_{w}") for w in grant.write))

    def may_read(label: str) -> bool:
        return grant.read == "all" or may_write(label) or any(label in (r, f"{prefix}_{r}") for r in grant.read)

    async def get_context(args: dict[str, Any]) -> str | None:
        label = label_of(args)
        if not may_read(label):
            raise HostCallRefused(f"Extension error: permission denied: cannot read context block {label!r}",
                                  "PermissionError")
        return await blocks.read(label)

    async def set_context(args: dict[str, Any]) -> bool:
        label = label_of(args)
        if not may_write(label):
            raise HostCallRefused(f"Extension error: permission denied: cannot write context block {label!r}",
                                  "PermissionError")
        key = args.get("key")
        try:
            await blocks.write(label, _text(args, "content"), key=str(key) if key is not None else None,
                               own=label in own)
        except ContextError as exc:
            raise HostCallRefused(str(exc), "ValueError") from exc
        return True

    return {"get_context": HostFunction(get_context, ("label",)),
            "set_context": HostFunction(set_context, ("label", "content", "key"))}


def _messages(messages: Callable[[], Sequence[Message]]) -> dict[str, HostFunction]:
    async def get_messages(args: dict[str, Any]) -> list[dict[str, Any]]:
        limit = args.get("limit", 20)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise HostCallRefused("limit must be a positive integer", "ValueError")
        recent = list(messages())[-min(limit, MAX_MESSAGES):]
        return [{"id": m.id, "role": m.role, "text": m.text[:MAX_MESSAGE_CHARS]} for m in recent]

    async def get_session_info(args: dict[str, Any]) -> dict[str, Any]:
        return {"message_count": len(messages())}

    return {"get_messages": HostFunction(get_messages, ("limit",)),
            "get_session_info": HostFunction(get_session_info)}


def _send(send: Callable[[str], Awaitable[None]]) -> dict[str, HostFunction]:
    async def send_message(args: dict[str, Any]) -> bool:
        text = _text(args, "text", limit=MAX_MESSAGE_CHARS)
        if not text.strip():
            raise HostCallRefused("text is empty", "ValueError")
        await send(text)
        return True

    return {"send_message": HostFunction(send_message, ("text",))}


__all__ = ["HOST_METHODS", "ExtensionEnvironment", "NetworkOptions", "granted_functions", "host_methods"]
