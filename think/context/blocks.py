"""Context blocks: labelled pieces of the system prompt (memory, instructions, skills, search).

A block's provider decides what it is, by the methods it has:

    get()                       read-only               [readonly]
    get() + set(content)        writable (memory)       [writable]    set_context
    get() + load(key)           a skill collection      [loadable]    load_context, unload_context
    get() + search(query)       searchable              [searchable]  search_context

A block without a provider is writable and stored in SQLite. When a session has blocks, its
system prompt is rendered from them once and then frozen, so every model call sends the same
prefix (provider prompt caches stay warm); a write through this API makes the next turn render it
again. `cache_prompt()` keeps the frozen prompt in storage across restarts.

A block added with `when_changed="remind"` never makes the prompt render again: when its content
differs from what the model last saw, the change is announced after the cached prefix instead, on
the newest user message (`think.context.reminders`), so a provider's prompt cache keeps hitting.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from think.context.tokens import estimate_tokens
from think.errors import ConfigurationError, ContextError
from think.storage import Database

BlockKind = Literal["readonly", "writable", "loadable", "searchable"]
WhenChanged = Literal["rewrite", "remind"]
"""What a change of a block does: render the system prompt again, or announce it as a reminder."""
RULE = "═" * 46
_LABEL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@runtime_checkable
class BlockProvider(Protocol):
    """The least a provider does: return the block's content (None or "" for empty)."""

    async def get(self) -> str | None: ...


@runtime_checkable
class PromptStore(Protocol):
    """Where `with_cached_prompt` keeps the frozen system prompt."""

    async def load(self) -> str | None: ...
    async def save(self, prompt: str | None) -> None:
        """Store the prompt; None forgets it."""
        ...


@dataclass(frozen=True, kw_only=True)
class ContextBlock:
    """A block as it is now."""

    label: str
    description: str | None
    content: str
    tokens: int
    max_tokens: int | None
    kind: BlockKind

    @property
    def writable(self) -> bool:
        return self.kind == "writable" or (self.kind in ("loadable", "searchable") and self.keyed)

    keyed: bool = False
    """A loadable or searchable block whose provider also takes `set(key, content, description)`."""

    @property
    def is_skill(self) -> bool:
        return self.kind == "loadable"

    @property
    def is_searchable(self) -> bool:
        return self.kind == "searchable"


class SqliteBlockProvider:
    """A writable block stored in `think_context_blocks` under `key`."""

    def __init__(self, db: Database, key: str) -> None:
        self.db = db
        self.key = key

    async def get(self) -> str | None:
        value = self.db.value("SELECT content FROM think_context_blocks WHERE key = ?", self.key)
        return None if value is None else str(value)

    async def set(self, content: str) -> None:
        self.db.sql("INSERT INTO think_context_blocks (key, content, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
                    self.key, content, time.time())


class SqlitePromptStore:
    """The frozen prompt in `think_context_blocks` (key `_system_prompt`, or `_system_prompt_<id>`)."""

    def __init__(self, db: Database, key: str) -> None:
        self.db = db
        self.key = key

    async def load(self) -> str | None:
        value = self.db.value("SELECT content FROM think_context_blocks WHERE key = ?", self.key)
        return None if value is None else str(value)

    async def save(self, prompt: str | None) -> None:
        if prompt is None:
            self.db.sql("DELETE FROM think_context_blocks WHERE key = ?", self.key)
        else:
            await SqliteBlockProvider(self.db, self.key).set(prompt)


def kind_of(provider: Any) -> BlockKind:
    if callable(getattr(provider, "load", None)):
        return "loadable"
    if callable(getattr(provider, "search", None)):
        return "searchable"
    if callable(getattr(provider, "set", None)):
        return "writable"
    return "readonly"


@dataclass
class _Block:
    label: str
    description: str | None
    max_tokens: int | None
    provider: Any
    kind: BlockKind
    when_changed: WhenChanged = "rewrite"


def render_block(block: ContextBlock) -> str:
    """A block as the model reads it: a rule, a header, a rule, then the content."""
    header = block.label.upper()
    if block.description:
        header += f" ({block.description})"
    if block.max_tokens:
        header += f" [{round(100 * block.tokens / block.max_tokens)}% — {block.tokens}/{block.max_tokens} tokens]"
    header += f" [{block.kind}]"
    return f"{RULE}\n{header}\n{RULE}\n{block.content}".rstrip("\n")


class ContextBlocks:
    """The blocks of one session and the system prompt rendered from them."""

    def __init__(self, db: Database, session_id: str) -> None:
        self.db = db
        self.session_id = session_id
        self._blocks: dict[str, _Block] = {}
        self._frozen: str | None = None
        self._frozen_tokens = 0
        self._store: PromptStore | None = None
        self.version = 0
        """Bumped when blocks are added or removed (tool schemas list the labels)."""

    # ---- configuration -----------------------------------------------------------------------

    def _key(self, name: str) -> str:
        return name if not self.session_id else f"{name}_{self.session_id}"

    def add(self, label: str, *, description: str | None = None, max_tokens: int | None = None,
            provider: Any = None, when_changed: WhenChanged = "rewrite") -> None:
        """Register a block; without `provider`, a writable block stored in SQLite."""
        if when_changed not in ("rewrite", "remind"):
            raise ConfigurationError(f"when_changed of block {label!r} must be 'rewrite' or 'remind', "
                                     f"not {when_changed!r}")
        if not _LABEL.match(label):
            raise ConfigurationError(f"context block label {label!r} is not valid: "
                                     "use 1-64 letters, digits, '_' or '-'")
        if label in self._blocks:
            raise ConfigurationError(f"there is already a context block labelled {label!r}")
        if max_tokens is not None and max_tokens <= 0:
            raise ConfigurationError(f"max_tokens of block {label!r} must be positive, got {max_tokens}")
        if provider is None:
            provider = SqliteBlockProvider(self.db, self._key(label))
        elif not callable(getattr(provider, "get", None)):
            raise ConfigurationError(f"the provider of block {label!r} has no get() method")
        self._blocks[label] = _Block(label, description, max_tokens, provider, kind_of(provider), when_changed)
        self._frozen = None
        self.version += 1

    def remove(self, label: str) -> None:
        self._entry(label)
        del self._blocks[label]
        self._frozen = None
        self.version += 1

    def cache_prompt(self, store: PromptStore | None = None) -> None:
        self._store = store if store is not None else SqlitePromptStore(self.db, self._key("_system_prompt"))

    def __bool__(self) -> bool:
        return bool(self._blocks)

    def labels(self, *kinds: BlockKind, keyed: bool | None = None) -> list[str]:
        """Labels in registration order, of the given kinds (all kinds when none are given)."""
        return [b.label for b in self._blocks.values() if (not kinds or b.kind in kinds)
                and (keyed is None or _keyed(b) == keyed)]

    def reminding(self) -> list[str]:
        """Labels of the blocks whose changes are announced as reminders (`when_changed="remind"`)."""
        return [b.label for b in self._blocks.values() if b.when_changed == "remind"]

    def provider(self, label: str) -> Any:
        return self._entry(label).provider

    def _entry(self, label: str) -> _Block:
        block = self._blocks.get(label)
        if block is None:
            known = ", ".join(self._blocks) or "none"
            raise ContextError(f"unknown context block {label!r} (blocks: {known})")
        return block

    # ---- reading -----------------------------------------------------------------------------

    async def get(self, label: str) -> ContextBlock:
        block = self._entry(label)
        content = await block.provider.get() or ""
        return ContextBlock(label=label, description=block.description, content=content,
                            tokens=estimate_tokens(content), max_tokens=block.max_tokens, kind=block.kind,
                            keyed=_keyed(block))

    async def get_all(self) -> list[ContextBlock]:
        return [await self.get(label) for label in self._blocks]

    async def load(self, label: str, key: str) -> str | None:
        block = self._entry(label)
        if block.kind != "loadable":
            raise ContextError(f"context block {label!r} is {block.kind}, not loadable")
        result = await block.provider.load(key)
        return None if result is None else str(result)

    async def search(self, label: str, query: str) -> list[str]:
        block = self._entry(label)
        if block.kind != "searchable":
            raise ContextError(f"context block {label!r} is {block.kind}, not searchable")
        found = await block.provider.search(query)
        return [found] if isinstance(found, str) else [str(item) for item in found]

    # ---- writing -----------------------------------------------------------------------------

    async def replace(self, label: str, content: str) -> ContextBlock:
        """Replace a writable block's content; `ContextError` (and no write) past `max_tokens`."""
        block = self._entry(label)
        if block.kind != "writable":
            raise ContextError(f"context block {label!r} is {block.kind}; only writable blocks can be replaced")
        self.check_fits(label, content)
        await block.provider.set(content)
        if block.when_changed == "rewrite":
            await self.blocks_changed()
        return await self.get(label)

    async def append(self, label: str, content: str) -> ContextBlock:
        current = (await self.get(label)).content
        return await self.replace(label, f"{current}\n{content}" if current else content)

    async def set_entry(self, label: str, key: str, content: str, description: str | None = None) -> None:
        """Write one keyed entry of a loadable or searchable block whose provider supports it."""
        block = self._entry(label)
        if not _keyed(block):
            raise ContextError(f"context block {label!r} does not take keyed entries")
        self.check_fits(label, content)
        await block.provider.set(key, content, description)
        if block.when_changed == "rewrite":
            await self.blocks_changed()

    def check_fits(self, label: str, content: str) -> int:
        block = self._entry(label)
        tokens = estimate_tokens(content)
        if block.max_tokens is not None and tokens > block.max_tokens:
            raise ContextError(f"content for {label!r} is about {tokens} tokens, over its limit of "
                               f"{block.max_tokens}; shorten it (nothing was written)")
        return tokens

    async def blocks_changed(self) -> None:
        """Blocks were written: the next turn renders the prompt again (and re-caches it)."""
        self._frozen = None
        if self._store is not None:
            await self._store.save(None)

    # ---- the system prompt -------------------------------------------------------------------

    async def system_prompt(self) -> str:
        """The frozen prompt: rendered once, then the same string until blocks change."""
        if not self._blocks:
            return ""
        if self._frozen is None and self._store is not None:
            self._set_frozen(await self._store.load())
        if self._frozen is None:
            return await self.refresh_system_prompt()
        return self._frozen

    async def refresh_system_prompt(self) -> str:
        """Render the blocks now (read-only providers are asked again) and freeze the result."""
        rendered = []
        for block in await self.get_all():
            if block.kind == "readonly" and not block.content.strip():
                continue
            rendered.append(render_block(block))
        prompt = "\n\n".join(rendered)
        self._set_frozen(prompt)
        if self._store is not None:
            await self._store.save(prompt)
        return prompt

    def _set_frozen(self, prompt: str | None) -> None:
        self._frozen = prompt
        self._frozen_tokens = estimate_tokens(prompt) if prompt else 0

    def prompt_tokens(self) -> int:
        """Estimated tokens of the frozen prompt (0 until it is rendered; never renders it)."""
        return self._frozen_tokens if self._frozen is not None else 0


def _keyed(block: _Block) -> bool:
    if block.kind not in ("loadable", "searchable"):
        return False
    return callable(getattr(block.provider, "set", None))
