"""`ExtensionManager`: the extensions of one agent — load, unload, list, restore, their tools.

A load checks the manifest, runs the source once in the sandbox to learn its tools and hooks,
checks those (names, schemas), registers the context blocks, and only then stores the extension
(one row) and makes its tools visible: a load that fails anywhere leaves nothing behind. Tools are
`<prefix>_<tool>` with the description `[<name>] …`; every call runs the source afresh in the
sandbox under `limits` with the granted host methods only.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from think.errors import ToolFailed
from think.extensions.capabilities import ExtensionEnvironment, granted_functions, host_methods
from think.extensions.manifest import ExtensionError, ExtensionManifest
from think.extensions.source import NAMESPACE, ToolDefinition, describe_program, invoke_program, parse_description
from think.extensions.store import ExtensionStore
from think.messages import JSONObject
from think.sandbox.host import HostFunction, HostLimits, SandboxHost
from think.storage import Database
from think.tools.tool import InvalidToolInput, Tool, ToolContext

log = logging.getLogger("think.extensions")

DEFAULT_LIMITS = HostLimits(timeout=10.0, memory=32 * 1024 * 1024, max_host_calls=200, max_output=64_000)
"""Per call of an extension's tool (and for the run that describes it at load)."""
HOOK_TIMEOUT = 5.0
MAX_SOURCE_CHARS = 200_000


@dataclass(frozen=True)
class Extension:
    """A static extension (`get_extensions()`): its manifest and Python source."""

    manifest: ExtensionManifest | dict[str, Any]
    source: str


@dataclass
class LoadedExtension:
    manifest: ExtensionManifest
    source: str
    tools: dict[str, Tool]
    hooks: tuple[str, ...]
    labels: list[str]
    static: bool
    functions: dict[str, HostFunction] = field(repr=False, default_factory=dict)
    methods: dict[str, str | None] = field(repr=False, default_factory=dict)

    @property
    def name(self) -> str:
        return self.manifest.name

    def info(self) -> JSONObject:
        m = self.manifest
        return {"name": m.name, "version": m.version, "description": m.description, "prefix": m.prefix,
                "permissions": m.permissions.model_dump(mode="json"), "tools": list(self.tools),
                "hooks": list(self.hooks), "context": list(self.labels), "static": self.static}


class ExtensionManager:
    """See the module docs. `env` holds what extensions may be granted; `host` runs them."""

    def __init__(self, db: Database, env: ExtensionEnvironment, *, host: SandboxHost | None = None,
                 limits: HostLimits = DEFAULT_LIMITS, hook_timeout: float = HOOK_TIMEOUT) -> None:
        self.store = ExtensionStore(db)
        self.env = env
        self.limits = limits
        self.host = host or SandboxHost(limits)
        self.hook_timeout = hook_timeout
        self._loaded: dict[str, LoadedExtension] = {}
        self._lock = anyio.Lock()
        self._restored = False

    # ---- loading -----------------------------------------------------------------------------

    async def load(self, manifest: ExtensionManifest | Mapping[str, Any], source: str, *,
                   persist: bool = True) -> LoadedExtension:
        """Load an extension (see the module docs); `ExtensionError` when it cannot be, and then
        nothing was loaded or stored. `persist=False`: for this process only (static ones)."""
        checked = ExtensionManifest.parse(manifest if isinstance(manifest, ExtensionManifest) else dict(manifest))
        if not isinstance(source, str) or not source.strip():
            raise ExtensionError("the extension source is empty")
        if len(source) > MAX_SOURCE_CHARS:
            raise ExtensionError(f"the extension source is longer than {MAX_SOURCE_CHARS} characters")
        async with self._lock:
            prefix = checked.prefix
            for other in self._loaded.values():
                if other.name == checked.name:
                    raise ExtensionError(f"an extension named {checked.name!r} is already loaded; unload it first")
                if other.manifest.prefix == prefix:
                    raise ExtensionError(f"extension {checked.name!r} would name its tools {prefix}_…, as "
                                         f"{other.name!r} does: choose another name")
            loaded = await self._build(checked, source, static=not persist)
            self._check_names(loaded)
            blocks = self.env.blocks
            if checked.context and blocks is None:
                raise ExtensionError("this agent has no session context for the extension's context blocks")
            if blocks is not None and checked.context:
                loaded.labels = blocks.add(prefix, checked.context)
            try:
                if persist:  # the one write that makes the load durable
                    self.store.save(checked.name, checked.model_dump(mode="json"), source)
            except BaseException:
                if blocks is not None:
                    blocks.detach(loaded.labels)
                raise
            self._loaded[checked.name] = loaded
            if blocks is not None and loaded.labels:
                await blocks.changed()
        log.info("extension %s %s loaded: tools %s", checked.name, checked.version, ", ".join(loaded.tools))
        return loaded

    async def _build(self, manifest: ExtensionManifest, source: str, *, static: bool) -> LoadedExtension:
        outcome = await self.host.run(describe_program(source), {})
        if outcome.status != "completed":
            raise ExtensionError(f"the extension source failed to run: {outcome.error}")
        declared = parse_description(outcome.value, tuple(manifest.hooks))
        functions = granted_functions(manifest, self.env)
        methods = host_methods(manifest)
        loaded = LoadedExtension(manifest, source, {}, declared.hooks, [], static, functions, methods)
        for definition in declared.tools:
            tool = self._tool(loaded, definition)
            loaded.tools[tool.name] = tool
        return loaded

    def _check_names(self, loaded: LoadedExtension) -> None:
        if self.env.taken_names is None:
            return
        try:
            taken = set(self.env.taken_names()) - set(self.get_tools())
        except Exception as exc:
            raise ExtensionError(f"cannot list the agent's tools to check the extension's names: {exc}") from exc
        if clash := sorted(taken & set(loaded.tools)):
            raise ExtensionError(f"extension {loaded.name!r} would replace tools of this agent: {', '.join(clash)}; "
                                 "choose another name")

    def _tool(self, loaded: LoadedExtension, definition: ToolDefinition) -> Tool:
        import jsonschema

        name = f"{loaded.manifest.prefix}_{definition.name}"
        if len(name) > 128:
            raise ExtensionError(f"tool name {name!r} is longer than 128 characters")
        validator = jsonschema.Draft202012Validator(definition.input_schema)

        def validate(arguments: JSONObject) -> JSONObject:
            error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path)
                at = f" at {where}" if where else ""
                raise InvalidToolInput(f"invalid arguments for {name}{at}: {error.message}")
            return arguments

        async def execute(arguments: JSONObject, ctx: ToolContext) -> Any:
            current = self._loaded.get(loaded.name)
            if current is not loaded:
                raise ToolFailed(f"Extension error: extension {loaded.name!r} is not loaded")
            return await self.call(loaded, "tool", definition.name, arguments, self.limits)

        return Tool(name=name, description=f"[{loaded.name}] {definition.description}",
                    input_schema=definition.input_schema, execute=execute, validate_input=validate)

    async def call(self, loaded: LoadedExtension, kind: str, name: str, value: Any, limits: HostLimits) -> Any:
        """Run one tool or hook of `loaded` in the sandbox; `ToolFailed` with the guest's error."""
        host = self.host if limits == self.host.limits else SandboxHost(limits, binary=self.host.binary)
        outcome = await host.run(invoke_program(loaded.source, kind, name, loaded.methods),
                                 {NAMESPACE: loaded.functions}, inputs={"__think_input": value})
        if outcome.status != "completed":
            raise ToolFailed(f"Extension error: {outcome.error}")
        return outcome.value

    async def unload(self, name: str) -> bool:
        """Remove an extension: its tools, context blocks (and their content) and stored row.
        False when no extension of that name is loaded."""
        async with self._lock:
            loaded = self._loaded.pop(name, None)
            if loaded is None:
                return False
            blocks = self.env.blocks
            with self.store.db.transaction():  # the row and the blocks' content go together
                self.store.remove(name)
                if blocks is not None:
                    blocks.forget(loaded.labels)
            if blocks is not None and loaded.labels:
                blocks.detach(loaded.labels)
                await blocks.changed()
        log.info("extension %s unloaded", name)
        return True

    async def restore(self, static: Sequence[Extension | Mapping[str, Any]] = ()) -> None:
        """Load the static extensions in order, then the stored ones (idempotent: a second call
        does nothing). One that fails is logged and skipped; its row stays."""
        if self._restored:
            return
        self._restored = True
        for spec in static:
            manifest, source = (spec.manifest, spec.source) if isinstance(spec, Extension) else (
                spec.get("manifest"), spec.get("source"))
            try:
                await self.load(manifest if isinstance(manifest, ExtensionManifest) else dict(manifest or {}),
                                str(source or ""), persist=False)
            except ExtensionError:
                log.exception("static extension could not be loaded")
        for row in self.store.all():
            if row.name in self._loaded:
                log.warning("stored extension %s has the name of a static one; the static one is used", row.name)
                continue
            try:
                await self.load(row.manifest, row.source, persist=False)
                self._loaded[row.name].static = False
            except ExtensionError:
                log.exception("stored extension %s could not be restored", row.name)

    # ---- reading -----------------------------------------------------------------------------

    def list(self) -> list[JSONObject]:
        """Every loaded extension, in load order: name, version, permissions, tools, hooks, context."""
        return [loaded.info() for loaded in self._loaded.values()]

    def get(self, name: str) -> LoadedExtension | None:
        return self._loaded.get(name)

    def get_tools(self) -> dict[str, Tool]:
        """The tools of every loaded extension (for the turn's tool set)."""
        tools: dict[str, Tool] = {}
        for loaded in self._loaded.values():
            tools.update(loaded.tools)
        return tools

    def with_hook(self, hook: str) -> builtins.list[LoadedExtension]:
        return [loaded for loaded in self._loaded.values() if hook in loaded.hooks]

    async def run_hook(self, hook: str, snapshot: JSONObject) -> builtins.list[tuple[str, Any]]:
        """Call `hook` of every extension that has it, in load order, each bounded by
        `hook_timeout`; failures are logged and skipped. The (name, result) of those that ran."""
        results: builtins.list[tuple[str, Any]] = []
        limits = HostLimits(timeout=min(self.hook_timeout, self.limits.timeout), memory=self.limits.memory,
                            max_recursion=self.limits.max_recursion, max_host_calls=self.limits.max_host_calls,
                            max_output=self.limits.max_output)
        for loaded in self.with_hook(hook):
            try:
                results.append((loaded.name, await self.call(loaded, "hook", hook, snapshot, limits)))
            except ToolFailed as exc:
                log.warning("extension %s: hook %s failed: %s", loaded.name, hook, exc)
            except Exception:
                log.exception("extension %s: hook %s failed", loaded.name, hook)
        return results


__all__ = ["DEFAULT_LIMITS", "HOOK_TIMEOUT", "Extension", "ExtensionManager", "LoadedExtension"]
