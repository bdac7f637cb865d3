"""`ExtensionManifest`: what an extension is and what it may touch, checked at the untrusted edge.

A manifest comes from the developer (`get_extensions()`) or from the model (`load_extension`),
so it is validated with pydantic and every mistake is an `ExtensionError` that says which field
is wrong and why. Nothing is loaded from a manifest that does not validate.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from think.errors import ThinkError

HOOKS = ("before_turn", "before_tool_call", "after_tool_call", "on_step_finish", "on_chunk")
"""The hooks an extension may declare, in the order a turn reaches them."""
Hook = Literal["before_turn", "before_tool_call", "after_tool_call", "on_step_finish", "on_chunk"]
_LABEL = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


class ExtensionError(ThinkError):
    """A manifest or source that cannot be loaded, or a call of an extension that is not loaded."""


def sanitize_name(name: str) -> str:
    """The tool prefix of an extension: non-alphanumerics become `_`, runs of them one `_`, and
    `_` at the edges is trimmed; `ExtensionError` when nothing is left."""
    prefix = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
    if not prefix:
        raise ExtensionError(f"extension name {name!r} has no letters or digits: it cannot name its tools")
    return prefix


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ContextGrant(_Strict):
    """Which context blocks the extension may read and write through its host."""

    read: list[str] | Literal["all"] = Field(default_factory=list)
    """Session labels (its own blocks by their short label too), or `"all"`."""
    write: list[str] | Literal["own"] = Field(default_factory=list)
    """Session labels, or `"own"`: the extension's own blocks."""


class SessionGrant(_Strict):
    send_message: bool = False
    """May append a user message to the conversation (`host.send_message(text)`)."""


class Permissions(_Strict):
    """What the extension's `host` object offers; anything not granted does not exist there."""

    network: list[str] | Literal[False] = False
    """Host patterns `host.fetch` may reach (`api.example.com`, `*.example.com`, `:port`);
    False or `[]`: no network."""
    workspace: Literal["none", "read", "read-write"] = "none"
    context: ContextGrant = Field(default_factory=ContextGrant)
    messages: Literal["none", "read"] = "none"
    session: SessionGrant = Field(default_factory=SessionGrant)

    @field_validator("network")
    @classmethod
    def _hosts(cls, value: list[str] | Literal[False]) -> list[str] | Literal[False]:
        if value is False:
            return value
        from think.net.patterns import Pattern  # httpx: loaded with the first network grant

        for pattern in value:
            Pattern.host(pattern)  # ValueError: pydantic reports it on this field
        return value

    @property
    def hosts(self) -> list[str]:
        return list(self.network) if self.network else []

    @property
    def writes(self) -> bool:
        """Whether the grant can change anything outside the sandbox (or reach the network)."""
        return bool(self.hosts) or self.workspace == "read-write" or bool(self.context.write) \
            or self.session.send_message


class ContextSpec(_Strict):
    """A context block the extension brings, registered as `<prefix>_<label>`."""

    label: str
    description: str | None = None
    type: Literal["readonly", "writable", "searchable"] = "readonly"
    """`readonly`: the model reads it, only the extension writes it (with a context write grant);
    `writable`: the model may also write it with `set_context`; `searchable`: entries the
    extension adds (`host.set_context(label, text, key=…)`) that the model finds with
    `search_context`."""
    max_tokens: int | None = Field(default=None, gt=0)

    @field_validator("label")
    @classmethod
    def _label(cls, value: str) -> str:
        if not _LABEL.match(value):
            raise ValueError("use 1-40 letters, digits, '_' or '-'")
        return value


class ExtensionManifest(_Strict):
    """An extension's name, version, permissions, context blocks and hooks."""

    name: str = Field(min_length=1, max_length=64)
    version: str = Field(default="0.0.0", min_length=1, max_length=32)
    description: str = Field(default="", max_length=2000)
    permissions: Permissions = Field(default_factory=Permissions)
    context: list[ContextSpec] = Field(default_factory=list)
    hooks: list[Hook] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not re.sub(r"[^A-Za-z0-9]+", "", value):
            raise ValueError("the name needs a letter or digit (its tools are named after it)")
        return value

    @field_validator("context")
    @classmethod
    def _labels(cls, value: list[ContextSpec]) -> list[ContextSpec]:
        labels = [spec.label for spec in value]
        if len(set(labels)) != len(labels):
            raise ValueError(f"context labels must be unique, got {labels}")
        return value

    @property
    def prefix(self) -> str:
        return sanitize_name(self.name)

    @classmethod
    def parse(cls, data: ExtensionManifest | dict[str, Any]) -> ExtensionManifest:
        """A checked manifest; `ExtensionError` listing every problem otherwise."""
        if isinstance(data, ExtensionManifest):
            return data
        if not isinstance(data, dict):
            raise ExtensionError(f"an extension manifest is an object, not {type(data).__name__}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in error['loc']) or 'manifest'}: {error['msg']}"
                                 for error in exc.errors())
            raise ExtensionError(f"invalid extension manifest: {problems}") from None


__all__ = ["HOOKS", "ContextGrant", "ContextSpec", "ExtensionError", "ExtensionManifest", "Hook", "Permissions",
           "SessionGrant", "sanitize_name"]
