"""What happens to a message on its way into storage: provider ephemera out, single parts past a hard cap cut."""

from __future__ import annotations

from collections.abc import Callable

import orjson

from think.messages import JSONObject, Message, ReasoningPart, TextPart, ToolPart

MAX_PART_BYTES = 16 * 1024 * 1024
"""The hard cap of one tool output or text in a stored message; a larger one is replaced by a
marker. Below it nothing is cut: a message larger than a row is split across rows instead. Kept
under the hydration budget (`Session.hydration_byte_budget`), so any message can be loaded."""
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
    return f"[{kind} too large to store: {size:,} bytes, over the {MAX_PART_BYTES:,} byte limit of one part]"


def cap_size(message: Message, limit: int = MAX_PART_BYTES) -> Message:
    """Replace each tool output or text larger than `limit` bytes on its own by a marker.

    A message that is large because of many parts, or one part under the limit, is stored whole
    (split across rows: `think.sessions.rows`); only a single part past the hard cap is cut.
    """
    oversized = []
    for index, part in enumerate(message.parts):
        if isinstance(part, ToolPart) and part.output is not None:
            size = len(orjson.dumps(part.output, default=str))
        elif isinstance(part, TextPart | ReasoningPart):
            size = len(part.text.encode())
        else:
            continue
        if size > limit:
            oversized.append((index, size))
    if not oversized:
        return message
    capped = message.model_copy(deep=True)
    for index, size in oversized:
        part = capped.parts[index]
        if isinstance(part, ToolPart):
            part.output = _marker("tool output", size)
        elif isinstance(part, TextPart | ReasoningPart):
            keep = min(len(part.text), limit // 4)
            part.text = part.text[:keep] + "\n" + _marker("text", size)
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
