"""A workspace file as a client's file panel shows it: its `FileInfo` JSON and, for text, its content.

    await preview_file(agent.workspace, "/notes/todo.md")
    # {"path": "/notes/todo.md", "name": "todo.md", "type": "file", "mimeType": "text/markdown",
    #  "size": 11, "createdAt": …, "updatedAt": …, "content": "- ship it\n"}

Binary files and files over the size limit are described, not sent: `content` is None, `reason`
says why (`"binary"` or `"too-large"`) and `note` says it for people. A raster image (PNG, JPEG,
GIF, WebP, AVIF, BMP) within the limit also comes as `dataUrl` (`data:image/png;base64,…`), for
the panel to show. A file over the limit is
not read at all, so a 20 MB file costs a `stat`, not 20 MB of I/O and an RPC frame to match.
"""

from __future__ import annotations

import base64
from typing import Any

from think.workspace.errors import FileNotFound, InvalidPath, IsADirectory
from think.workspace.media import GENERIC, format_size, is_text_media_type, looks_like_text, normalize_media_type
from think.workspace.operations import ReadOps
from think.workspace.paths import normalize_path

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp"})
"""Images a browser shows from a data URL (SVG is text: it comes as `content`)."""
DEFAULT_PREVIEW_BYTES = 1024 * 1024
"""Largest file whose content `preview_file` returns by default."""
MAX_PREVIEW_BYTES = 4 * 1024 * 1024
"""Largest `max_bytes` a caller may ask for (the limit protects the server, not the caller)."""


def _is_text(media: str | None, data: bytes) -> bool:
    if media is None or media in GENERIC:
        return looks_like_text(data)
    return is_text_media_type(media) or media == "image/svg+xml"


async def preview_file(ops: ReadOps, path: str, *, max_bytes: int = DEFAULT_PREVIEW_BYTES) -> dict[str, Any]:
    """The file at `path` for display (see the module docstring).

    Raises `FileNotFound` for a missing path, `IsADirectory` for a directory and `InvalidPath` for
    a path that is not one, or a `max_bytes` that is not a positive integer; their messages are
    written for people. `max_bytes` above `MAX_PREVIEW_BYTES` counts as `MAX_PREVIEW_BYTES`.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise InvalidPath(f"EINVAL: max_bytes must be a positive integer, not {max_bytes!r}", path=str(path)[:200])
    limit = min(max_bytes, MAX_PREVIEW_BYTES)
    p = normalize_path(path)
    info = await ops.stat(p)
    if info is None:
        raise FileNotFound(f"ENOENT: no such file: {p}", path=p)
    if info.type == "directory":
        raise IsADirectory(f"EISDIR: {p} is a directory, not a file (list it with list_workspace)", path=p)
    out = info.to_json()
    media = normalize_media_type(info.mime_type)
    if info.size > limit:
        return {**out, "content": None, "reason": "too-large",
                "note": f"{p} is {format_size(info.size)}, over the {format_size(limit)} that can be shown here."}
    data = await ops.read_bytes(p)
    if data is None:  # deleted since the stat
        raise FileNotFound(f"ENOENT: no such file: {p}", path=p)
    if not _is_text(media, data):
        described = {**out, "content": None, "reason": "binary",
                     "note": f"{p} is a binary file ({media or 'unknown type'}, {format_size(info.size)}); "
                             "it is not shown as text."}
        if media in IMAGE_TYPES:
            described["dataUrl"] = f"data:{media};base64,{base64.b64encode(data).decode()}"
        return described
    return {**out, "content": data.decode("utf-8", "replace")}
