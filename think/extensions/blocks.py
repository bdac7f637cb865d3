"""An extension's context blocks in the session: registered as `<prefix>_<label>`, stored in the
agent's SQLite (`think_context_blocks`, key `ext:<label>`), removed with the extension.

`readonly` blocks have only `get()` for the session (the model cannot write them; the extension
can, with a write grant); `writable` ones also `set()` (the model's `set_context`); `searchable`
ones hold entries the extension adds, found with `search_context`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import orjson

from think.context.blocks import ContextBlocks
from think.errors import ConfigurationError, ContextError
from think.extensions.manifest import ContextSpec, ExtensionError
from think.storage import Database

MAX_ENTRIES = 500
"""Entries a searchable block keeps (the oldest go first)."""


class _Stored:
    def __init__(self, db: Database, key: str) -> None:
        self.db = db
        self.key = key

    def content(self) -> str | None:
        value = self.db.value("SELECT content FROM think_context_blocks WHERE key = ?", self.key)
        return None if value is None else str(value)

    def store(self, content: str) -> None:
        self.db.sql("INSERT INTO think_context_blocks (key, content, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
                    self.key, content, time.time())


class ReadonlyBlock(_Stored):
    async def get(self) -> str | None:
        return self.content()


class WritableBlock(ReadonlyBlock):
    async def set(self, content: str) -> None:
        self.store(content)


class SearchableBlock(_Stored):
    def __init__(self, db: Database, key: str, description: str | None) -> None:
        super().__init__(db, key)
        self.description = description

    def entries(self) -> dict[str, str]:
        raw = self.content()
        return dict(orjson.loads(raw)) if raw else {}

    def add(self, key: str, content: str) -> None:
        entries = self.entries()
        entries.pop(key, None)
        entries[key] = content
        while len(entries) > MAX_ENTRIES:
            entries.pop(next(iter(entries)))
        self.store(orjson.dumps(entries).decode())

    async def get(self) -> str:
        return f"{len(self.entries())} entries; find them with search_context."

    async def search(self, query: str) -> list[str]:
        words = [w for w in query.lower().split() if w]
        found = [f"[{key}] {text}" for key, text in reversed(self.entries().items())
                 if all(w in f"{key} {text}".lower() for w in words)]
        return found[:10]


class ExtensionBlocks:
    """The session's blocks as extensions add, read and write them."""

    def __init__(self, blocks: ContextBlocks, db: Database) -> None:
        self.blocks = blocks
        self.db = db

    def add(self, prefix: str, specs: Sequence[ContextSpec]) -> list[str]:
        """Register the blocks (all or none); their session labels."""
        added: list[str] = []
        try:
            for spec in specs:
                label = f"{prefix}_{spec.label}"
                key = f"ext:{label}"
                provider: _Stored
                if spec.type == "searchable":
                    provider = SearchableBlock(self.db, key, spec.description)
                else:
                    provider = WritableBlock(self.db, key) if spec.type == "writable" else ReadonlyBlock(self.db, key)
                self.blocks.add(label, description=spec.description, max_tokens=spec.max_tokens, provider=provider)
                added.append(label)
        except ConfigurationError as exc:
            for label in added:
                self.blocks.remove(label)
            raise ExtensionError(f"cannot add the extension's context blocks: {exc}") from None
        return added

    def detach(self, labels: Sequence[str]) -> None:
        """Take the blocks out of the session (the next turn renders the prompt without them)."""
        for label in labels:
            if label in self.blocks.labels():
                self.blocks.remove(label)

    def forget(self, labels: Sequence[str]) -> None:
        """Delete what the blocks hold."""
        for label in labels:
            self.db.sql("DELETE FROM think_context_blocks WHERE key = ?", f"ext:{label}")

    async def changed(self) -> None:
        await self.blocks.blocks_changed()

    def labels(self) -> list[str]:
        return self.blocks.labels()

    async def read(self, label: str) -> str | None:
        return (await self.blocks.get(label)).content

    async def write(self, label: str, content: str, *, key: str | None, own: bool) -> None:
        provider = self.blocks.provider(label)
        self.blocks.check_fits(label, content)
        if isinstance(provider, SearchableBlock):
            if not key:
                raise ContextError(f"context block {label!r} is searchable: give each entry a key")
            provider.add(key, content)
        elif own and isinstance(provider, ReadonlyBlock):
            provider.store(content)
        else:
            await self.blocks.replace(label, content)
            return
        await self.blocks.blocks_changed()


__all__ = ["ExtensionBlocks", "ReadonlyBlock", "SearchableBlock", "WritableBlock"]
