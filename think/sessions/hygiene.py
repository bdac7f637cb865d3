"""What happens to a message on its way into storage: provider ephemera out, oversized rows capped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from think.messages import JSONObject, Message, ReasoningPart, TextPart, ToolPart

MAX_ROW_BYTES = 1_800_000
"""A stored message is kept under this size (SQLite handles more; clients and providers choke)."""
_EPHEMERAL_OPENAI_KEYS = ("itemId", "reasoningEncryptedContent")


def _strip_openai(meta: JSONObject | None) -> tuple[JSONObject | None, bool]:
    if not meta or not isinstance(meta.get("openai"), dict):
        return meta, False
    openai = meta["openai"]
    if not any(key in openai for key in _EPHEMERAL_OPENAI_KEYS):
        return meta, False
    kept = {k: v for k, v in openai.items() if k not in _EPHEMERAL_OPENAI_KEYS}
    out = {k: v for k, v in meta.items() if k != "openai"}
    if kept:
        out["openai"] = kept
    return (out or None), True


def _needs_sanitizing(message: Message) -> bool:
    for part in message.parts:
        if isinstance(part, ReasoningPart) and not part.text and not part.provider_metadata:
            return True
        meta = part.call_provider_metadata if isinstance(part, ToolPart) else getattr(part, "provider_metadata", None)
        if _strip_openai(meta)[1]:
            return True
    return False


def sanitize(message: Message) -> Message:
    """Drop provider data that must not be replayed (OpenAI item ids, encrypted reasoning) and empty
    reasoning parts. Returns `message` itself when nothing needs to change."""
    if not _needs_sanitizing(message):
        return message
    clean = message.model_copy(deep=True)
    parts = []
    for part in clean.parts:
        if isinstance(part, ReasoningPart | TextPart):
            part.provider_metadata = _strip_openai(part.provider_metadata)[0]
            if isinstance(part, ReasoningPart) and not part.text and not part.provider_metadata:
                continue
        elif isinstance(part, ToolPart):
            part.call_provider_metadata = _strip_openai(part.call_provider_metadata)[0]
        parts.append(part)
    clean.parts = parts
    return clean


def _marker(kind: str, size: int) -> str:
    return f"[{kind} too large to store: {size:,} bytes; replaced by this marker]"


def cap_size(message: Message, limit: int = MAX_ROW_BYTES) -> Message:
    """Replace the largest tool outputs, then texts, by a marker until the row fits under `limit`."""
    size = len(orjson.dumps(message.to_json()))
    if size <= limit:
        return message
    capped = message.model_copy(deep=True)
    candidates: list[tuple[int, Any]] = []
    for part in capped.parts:
        if isinstance(part, ToolPart) and part.output is not None:
            candidates.append((len(orjson.dumps(part.output, default=str)), part))
        elif isinstance(part, TextPart | ReasoningPart):
            candidates.append((len(part.text.encode()), part))
    for part_size, part in sorted(candidates, key=lambda c: c[0], reverse=True):
        if isinstance(part, ToolPart):
            part.output = _marker("tool output", part_size)
        else:
            keep = max(0, min(len(part.text), limit // 4))
            part.text = part.text[:keep] + "\n" + _marker("text", part_size)
        size = len(orjson.dumps(capped.to_json()))
        if size <= limit:
            break
    return capped


def prepare_for_storage(message: Message) -> Message:
    return cap_size(sanitize(message))


Sanitizer = Callable[[Message], "Message | None"]
"""`Think.on_sanitize_message`: may change a message's parts and metadata before it is stored."""


def sanitized(sanitizer: Sanitizer | None, message: Message) -> Message:
    """`message` through the application's sanitizer (on a copy: the caller's object is left
    alone); a result that is not a Message, or changes the id or role, is a `TypeError`."""
    if sanitizer is None:
        return message
    copy = message.copy_deep()
    out = sanitizer(copy)
    out = copy if out is None else out
    if not isinstance(out, Message):
        raise TypeError(f"on_sanitize_message must return a Message or None, not {type(out).__name__}")
    if (out.id, out.role) != (message.id, message.role):
        raise TypeError(f"on_sanitize_message must keep the message's id and role ({message.id!r}, "
                        f"{message.role!r}); it returned ({out.id!r}, {out.role!r})")
    return out
