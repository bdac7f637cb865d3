"""Files a person attaches to a message, kept in the agent's workspace.

A browser sends an attachment as an AI SDK file part whose URL is a `data:` URL. Before the
message is stored, `store_attachments` decodes each such part, checks its size, writes the bytes
to `/attachments/<message id>/<n>-<name>` in the workspace and replaces the URL with
`workspace:/attachments/<message id>/<n>-<name>`. So the transcript stays small (a photo is not
copied into every row and frame), the files panel lists the file, tools and `bash` can read it,
and the same message sent again (a reconnecting client) writes the same paths. Before each model
call `resolve_for_model` reads such files back into `data:` URLs, which is what multimodal models
take; a file deleted since is replaced by a note saying so.

What is trusted: nothing about a part but its bytes. The name is reduced to a safe file name, the
media type must look like one, the size is capped (`Think.max_attachment_bytes`, 5 MB by default;
a bigger file is refused with a message saying so and nothing is stored), and a `workspace:` URL
sent by a client is refused by `think.turns.trust.check_files`: only the server writes them.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import replace
from urllib.parse import unquote_to_bytes

from think.messages import FilePart, Message
from think.models.base import FileContent, ModelMessage, TextContent, UserMessage
from think.workspace.workspace import Workspace

__all__ = ["DEFAULT_MAX_ATTACHMENT_BYTES", "WORKSPACE_SCHEME", "AttachmentRefused", "has_workspace_file",
           "resolve_for_model", "store_attachments", "workspace_path"]

WORKSPACE_SCHEME = "workspace:"
"""The URL scheme of a file part whose bytes live in the agent's workspace."""
DEFAULT_MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024
"""The largest attachment stored by default (`Think.max_attachment_bytes`)."""
ATTACHMENTS_DIR = "/attachments"
_MEDIA_TYPE = re.compile(r"^[\w.+-]+/[\w.+-]+$")
_UNSAFE = re.compile(r"[^\w.-]+")


class AttachmentRefused(ValueError):
    """An attachment that cannot be stored: the text says which and why."""


def workspace_path(url: str) -> str | None:
    """The workspace path a `workspace:` URL names, or None for any other URL."""
    return url[len(WORKSPACE_SCHEME):] if url.startswith(WORKSPACE_SCHEME) else None


def _safe_name(filename: str | None, index: int) -> str:
    stem = _UNSAFE.sub("-", (filename or "").rsplit("/", 1)[-1].rsplit("\\", 1)[-1]).strip("-.")[:100]
    return f"{index}-{stem or 'file'}"


def _decode(url: str, label: str) -> bytes:
    header, comma, payload = url.partition(",")
    if not comma:
        raise AttachmentRefused(f"{label}: a data: URL needs a comma before its data")
    try:
        if header.endswith(";base64"):
            return base64.b64decode(payload, validate=True)
        return unquote_to_bytes(payload)
    except (binascii.Error, ValueError):
        raise AttachmentRefused(f"{label}: its data is not valid base64") from None


async def store_attachments(workspace: Workspace, message: Message, *,
                            max_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES) -> Message:
    """`message` with each `data:` file part written to the workspace and pointing there (see the
    module docstring); the message itself when it has none. Every part is checked before any is
    written: one refused part stores nothing."""
    pending: list[tuple[int, str, bytes, FilePart]] = []
    for index, part in enumerate(message.parts):
        if not isinstance(part, FilePart) or not part.url.startswith("data:"):
            continue
        label = f"the attachment {part.filename or f'#{index + 1}'!r}"
        if not _MEDIA_TYPE.match(part.media_type):
            raise AttachmentRefused(f"{label} has no valid media type ({part.media_type!r})")
        # A base64 payload is 4/3 of the bytes: refuse the obviously too big before decoding.
        if len(part.url) > max_bytes * 4 // 3 + 1024:
            raise AttachmentRefused(f"{label} is larger than the {_size(max_bytes)} an attachment may be")
        data = _decode(part.url, label)
        if len(data) > max_bytes:
            raise AttachmentRefused(f"{label} is {_size(len(data))}, larger than the {_size(max_bytes)} "
                                    "an attachment may be")
        folder = _UNSAFE.sub("-", message.id).strip("-.")[:100] or "message"
        path = f"{ATTACHMENTS_DIR}/{folder}/{_safe_name(part.filename, index)}"
        pending.append((index, path, data, part))
    if not pending:
        return message
    parts = list(message.parts)
    for index, path, data, part in pending:
        await workspace.write_file(path, data, mime_type=part.media_type)
        parts[index] = part.model_copy(update={"url": f"{WORKSPACE_SCHEME}{path}"})
    return message.model_copy(update={"parts": parts})


def has_workspace_file(message: ModelMessage) -> bool:
    """A user message with a file the model gets read back from the workspace."""
    return isinstance(message, UserMessage) and any(
        isinstance(c, FileContent) and c.data.startswith(WORKSPACE_SCHEME) for c in message.content)


async def resolve_for_model(messages: list[ModelMessage], workspace: Workspace, *, known: int = 0,
                            files: Sequence[int] = ()) -> list[ModelMessage]:
    """The model's messages with each workspace file read back into a `data:` URL (a file gone
    since is a note instead). Of the first `known` messages only those at the indexes `files`
    have workspace files (`ModelHistory.scanned`): a turn looks at those and the newer messages,
    not at the whole conversation. `messages` itself is returned when none has a file."""
    out = messages
    for index in (*files, *range(known, len(messages))):
        message = messages[index]
        if isinstance(message, UserMessage) and has_workspace_file(message):
            if out is messages:
                out = list(messages)
            out[index] = await _read_back(message, workspace)
    return out


async def _read_back(message: UserMessage, workspace: Workspace) -> UserMessage:
    content: list[TextContent | FileContent] = []
    for item in message.content:
        path = workspace_path(item.data) if isinstance(item, FileContent) else None
        if path is None:
            content.append(item)
            continue
        assert isinstance(item, FileContent)
        data = await workspace.read_bytes(path)
        if data is None:
            content.append(TextContent(f"[The attached file {item.filename or path} is no longer in the "
                                       "workspace.]"))
            continue
        encoded = base64.b64encode(data).decode("ascii")
        content.append(replace(item, data=f"data:{item.media_type};base64,{encoded}"))
    return UserMessage(tuple(content))


def _size(count: int) -> str:
    """`5 MB`, `1.1 KB`, `300 bytes`: one decimal where it is not a whole number."""
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if count >= scale:
            return f"{count / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{count} bytes"
