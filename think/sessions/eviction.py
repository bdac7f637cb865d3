"""Media eviction: aged images leave the transcript for workspace files, a marker stays.

A conversation that shows the model a screenshot every few turns would otherwise send every one
of them on every later model call (read back from the workspace into `data:` URLs), long after
they stopped mattering. Before a turn, each image file part older than the newest
`keep_recent_messages` messages of the active path is replaced by a text part

    [evicted image/png, 48,213 bytes; preserved at /attachments/<message>/0-shot.png]

naming the workspace file that holds its bytes, so the model (and a person) can read it back with
the workspace tools. An attachment already lives in the workspace (`think.workspace.attachments`);
a `data:` URL (an image a tool or the application stored inline) is written to
`/attachments/evicted/<message>-<n>.<ext>` first. A `data:` file part of another media type is
evicted the same way once it is at least `min_inline_bytes`.

The file is written before the message is stored again, so a process killed in between leaves
the message as it was (the next turn evicts it again, to the same path). The rewritten message
is an ordinary edit: clients receive it in the next transcript, and it is the marker that later
model calls see. What it trusts: the stored messages (already checked on their way in).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

from think.messages import FilePart, Message, TextPart
from think.sessions.session import Session
from think.workspace.attachments import workspace_path
from think.workspace.workspace import Workspace

EVICTED_DIR = "/attachments/evicted"
_UNSAFE = re.compile(r"[^\w.-]+")


@dataclass(frozen=True, kw_only=True)
class MediaEviction:
    """`Think.media_eviction`: which file parts leave the transcript, and when."""

    keep_recent_messages: int = 8
    """The newest messages of the active path are never touched (at least the recent window the
    model sees whole)."""
    min_inline_bytes: int = 32 * 1024
    """A `data:` file part that is not an image is evicted only from this size (images always)."""


def marker(media_type: str, size: int, path: str) -> str:
    return f"[evicted {media_type}, {size:,} bytes; preserved at {path}]"


def _decode(url: str) -> bytes | None:
    header, comma, payload = url.partition(",")
    if not comma:
        return None
    try:
        return base64.b64decode(payload, validate=True) if header.endswith(";base64") else unquote_to_bytes(payload)
    except (binascii.Error, ValueError):
        return None


def _evictable(part: FilePart, config: MediaEviction) -> bool:
    if part.media_type.startswith("image/"):
        return part.url.startswith(("data:", "workspace:"))
    return part.url.startswith("data:") and len(part.url) >= config.min_inline_bytes


async def _evict_message(message: Message, workspace: Workspace, config: MediaEviction) -> Message | None:
    """`message` with its evictable file parts replaced by markers, or None if it has none."""
    parts = list(message.parts)
    changed = False
    for index, part in enumerate(parts):
        if not isinstance(part, FilePart) or not _evictable(part, config):
            continue
        path = workspace_path(part.url)
        if path is not None:
            info = await workspace.stat(path)
            size = info.size if info is not None else 0
        else:
            data = _decode(part.url)
            if data is None:
                continue  # not a readable data: URL; left as it is
            extension = _UNSAFE.sub("", part.media_type.split("/")[-1]) or "bin"
            folder = _UNSAFE.sub("-", message.id).strip("-.")[:100] or "message"
            path = f"{EVICTED_DIR}/{folder}-{index}.{extension}"
            await workspace.write_file(path, data, mime_type=part.media_type)
            size = len(data)
        parts[index] = TextPart(text=marker(part.media_type, size, path))
        changed = True
    return message.model_copy(update={"parts": parts}) if changed else None


class MediaEvictor:
    """Runs eviction passes over sessions, remembering how far each one was checked."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._checked: dict[str, str] = {}  # session id -> id of the newest message already checked

    async def evict(self, session: Session, config: MediaEviction) -> int:
        """Evict the aged media of the session's active path; how many messages changed."""
        history = session.history()
        end = len(history) - config.keep_recent_messages
        if end <= 0:
            return 0
        done = self._checked.get(session.id)
        start = session.index_of(done) if done is not None else None
        start = 0 if start is None or start >= end else start + 1
        changed: list[Message] = []
        for message in history[start:end]:
            if any(isinstance(p, FilePart) for p in message.parts):
                evicted = await _evict_message(message, self.workspace, config)
                if evicted is not None:
                    changed.append(evicted)
        self._checked[session.id] = history[end - 1].id
        if changed:
            session.save(changed)
        return len(changed)
