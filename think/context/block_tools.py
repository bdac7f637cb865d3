"""The tools a session's context blocks give the model: `set_context`, `load_context`,
`unload_context` and `search_context`.

Labels are an `enum` in each schema and checked again before the tool runs, so an unknown or
read-only label comes back to the model as a clear input error. A write over a block's
`max_tokens` fails with the block's usage and writes nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from think.context.blocks import ContextBlocks
from think.errors import ContextError, ToolFailed
from think.messages import JSONObject, Message, ToolPart
from think.tools.tool import InvalidToolInput, Tool, ToolContext

if TYPE_CHECKING:
    from think.sessions.session import Session

UNLOADED_MARKER = "[skill unloaded: {key}]"
NOT_FOUND = "Not found: {key}"


def context_tools(session: Session) -> dict[str, Tool]:
    """The context tools for the session's blocks (none when it has no blocks)."""
    blocks = session.context
    if not blocks:
        return {}
    tools: dict[str, Tool] = {}
    writable = blocks.labels("writable") + blocks.labels("loadable", "searchable", keyed=True)
    if writable:
        tools["set_context"] = _set_context(blocks, writable)
    loadable = blocks.labels("loadable")
    if loadable:
        tools["load_context"] = _load_context(blocks, loadable)
        tools["unload_context"] = _unload_context(session, loadable)
    searchable = blocks.labels("searchable")
    if searchable:
        tools["search_context"] = _search_context(blocks, searchable)
    return tools


def _label_checker(blocks: ContextBlocks, tool: str, labels: Sequence[str], kind: str,
                   required: Sequence[str]) -> Any:
    def validate(arguments: JSONObject) -> JSONObject:
        missing = [name for name in required if not isinstance(arguments.get(name), str)]
        if missing:
            raise InvalidToolInput(f"{tool} needs {', '.join(missing)} (text)")
        label = arguments["label"]
        if label not in labels:
            known = "is not " + kind if label in blocks.labels() else "does not exist"
            raise InvalidToolInput(f"context block {label!r} {known}; {kind} blocks: {', '.join(labels)}")
        return arguments

    return validate


def _schema(labels: Sequence[str], properties: JSONObject, required: Sequence[str]) -> JSONObject:
    return {"type": "object",
            "properties": {"label": {"type": "string", "enum": list(labels), "description": "The block's label."},
                           **properties},
            "required": ["label", *required], "additionalProperties": False}


def _derived_key(content: str) -> str:
    words = re.findall(r"\w+", content.lower())[:6]
    return "-".join(words or ["entry"]) + "-" + hashlib.sha1(content.encode()).hexdigest()[:6]


def _set_context(blocks: ContextBlocks, labels: Sequence[str]) -> Tool:
    keyed = set(blocks.labels("loadable", "searchable", keyed=True))
    properties: JSONObject = {
        "content": {"type": "string", "description": "The new content (or the text to append)."},
        "action": {"type": "string", "enum": ["replace", "append"],
                   "description": "replace (default) the whole block, or append a line to it."},
    }
    if keyed:
        properties["metadata"] = {"type": "object", "description": "For keyed blocks: the entry's title and summary.",
                                  "properties": {"title": {"type": "string"}, "description": {"type": "string"}}}

    async def execute(arguments: JSONObject, ctx: ToolContext) -> str:
        label, content = arguments["label"], arguments["content"]
        try:
            if label in keyed:
                meta = arguments.get("metadata") or {}
                key = str(meta.get("title") or _derived_key(content))
                await blocks.set_entry(label, key, content, meta.get("description"))
                return f'Indexed "{key}" in {label}.'
            if arguments.get("action") == "append":
                block = await blocks.append(label, content)
            else:
                block = await blocks.replace(label, content)
        except ContextError as exc:
            raise ToolFailed(f"Error: {exc}") from exc
        if block.max_tokens:
            pct = round(100 * block.tokens / block.max_tokens)
            return f"Written to {label}. Usage: {pct}% ({block.tokens}/{block.max_tokens} tokens)"
        return f"Written to {label}. Usage: {block.tokens} tokens"

    return Tool(name="set_context", execute=execute,
                description="Write to a context block (your memory). Writes show in the system prompt from the "
                            "next turn on; keep blocks within their token limits.",
                input_schema=_schema(labels, properties, ["content"]),
                validate_input=_label_checker(blocks, "set_context", labels, "writable", ["label", "content"]))


def _load_context(blocks: ContextBlocks, labels: Sequence[str]) -> Tool:
    async def execute(arguments: JSONObject, ctx: ToolContext) -> str:
        text = await blocks.load(arguments["label"], arguments["key"])
        return text if text is not None else NOT_FOUND.format(key=arguments["key"])

    return Tool(name="load_context", execute=execute,
                description="Load a document (such as a skill) from a loadable context block by its key.",
                input_schema=_schema(labels, {"key": {"type": "string", "description": "The document's key."}},
                                     ["key"]),
                validate_input=_label_checker(blocks, "load_context", labels, "loadable", ["label", "key"]))


def loaded_keys(history: Sequence[Message]) -> list[tuple[str, str]]:
    """(label, key) of every `load_context` result in `history` that was not unloaded."""
    loaded: dict[tuple[str, str], None] = {}
    for message in history:
        for part in message.parts:
            if isinstance(part, ToolPart) and part.name == "load_context" and part.state == "output-available":
                args = part.input if isinstance(part.input, dict) else {}
                item = (str(args.get("label")), str(args.get("key")))
                if part.output == UNLOADED_MARKER.format(key=item[1]):
                    loaded.pop(item, None)
                elif part.output != NOT_FOUND.format(key=item[1]):
                    loaded[item] = None
    return list(loaded)


def _unload_context(session: Session, labels: Sequence[str]) -> Tool:
    async def execute(arguments: JSONObject, ctx: ToolContext) -> str:
        label, key = arguments["label"], arguments["key"]
        marker = UNLOADED_MARKER.format(key=key)
        changed: list[Message] = []
        for message in session.history():
            hits = [i for i, p in enumerate(message.parts)
                    if isinstance(p, ToolPart) and p.name == "load_context" and p.state == "output-available"
                    and isinstance(p.input, dict) and p.input.get("label") == label and p.input.get("key") == key
                    and p.output != marker]
            if hits:
                copy = message.copy_deep()
                for i in hits:
                    part = copy.parts[i]
                    assert isinstance(part, ToolPart)
                    part.output = marker
                changed.append(copy)
        if not changed:
            return f'"{key}" is not loaded in {label}.'
        session.save(changed)
        return f'Unloaded "{key}" from {label}. Context reclaimed.'

    loaded = [f"{label}/{key}" for label, key in loaded_keys(session.history()) if label in labels]
    listed = f" Loaded now: {', '.join(loaded)}." if loaded else " Nothing is loaded now."
    return Tool(name="unload_context", execute=execute,
                description="Unload a document loaded with load_context, to free context." + listed,
                input_schema=_schema(labels, {"key": {"type": "string"}}, ["key"]),
                validate_input=_label_checker(session.context, "unload_context", labels, "loadable", ["label", "key"]))


def _search_context(blocks: ContextBlocks, labels: Sequence[str]) -> Tool:
    async def execute(arguments: JSONObject, ctx: ToolContext) -> str:
        results = await blocks.search(arguments["label"], arguments["query"])
        return "\n".join(results[:10]) if results else "No results found."

    return Tool(name="search_context", execute=execute,
                description="Full-text search in a searchable context block (all words must match).",
                input_schema=_schema(labels, {"query": {"type": "string", "description": "Words to look for."}},
                                     ["query"]),
                validate_input=_label_checker(blocks, "search_context", labels, "searchable", ["label", "query"]))
