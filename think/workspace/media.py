"""Media types of workspace files: from the content first, the file name second; sizes for people."""

from __future__ import annotations

import functools
import mimetypes

GENERIC = frozenset({"application/octet-stream", "binary/octet-stream"})
_TEXT_APPLICATION = frozenset({
    "application/json", "application/javascript", "application/typescript", "application/xml",
    "application/x-javascript", "application/x-sh", "application/x-python", "application/sql",
    "application/toml", "application/yaml", "application/x-yaml", "application/x-httpd-php",
})
_SNIFF_BYTES = 4096
_OURS = {".md": "text/markdown", ".markdown": "text/markdown", ".yaml": "application/yaml",
         ".yml": "application/yaml", ".toml": "application/toml", ".ts": "application/typescript",
         ".tsx": "application/typescript", ".mts": "application/typescript", ".jsx": "text/jsx",
         ".webp": "image/webp"}


@functools.cache
def _types() -> mimetypes.MimeTypes:
    """Built-in types only: the system's /etc/mime.types differs between machines (and calls .ts
    "text/vnd.trolltech.linguist"), and stored media types should not. Made on first use: the
    constructor reads the system's tables (for the module's global ones)."""
    types = mimetypes.MimeTypes()
    for ext, media_type in _OURS.items():
        types.add_type(media_type, ext)
    return types


def format_size(size: int | float) -> str:
    """`512 B`, `1.2 KB`, `3.0 MB` (1 KB = 1024 B), as the original's tools print sizes."""
    if size < 1024:
        return f"{int(size)} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def normalize_media_type(media_type: str | None) -> str | None:
    if not media_type:
        return None
    return media_type.split(";", 1)[0].strip().lower() or None


def is_text_media_type(media_type: str) -> bool:
    return (media_type.startswith("text/") or media_type in _TEXT_APPLICATION
            or media_type.endswith(("+json", "+xml")))


def sniff(data: bytes) -> str | None:
    """PNG, JPEG, GIF, WEBP, PDF or SVG from the first bytes, else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    head = data[:512].decode("utf-8", "replace").lstrip().lower()
    if head.startswith("<svg") or ("<svg" in head and head.startswith("<?xml")):
        return "image/svg+xml"
    return None


def looks_like_text(data: bytes) -> bool:
    """No NUL byte, and under 1% replacement characters when decoded as UTF-8."""
    sample = data[:_SNIFF_BYTES]
    if not sample:
        return True
    if b"\x00" in sample:
        return False
    # A multi-byte character cut at the end of the sample is not a sign of binary data.
    text = sample.decode("utf-8", "replace")
    bad = text.count("\ufffd")
    if bad and len(sample) == _SNIFF_BYTES:
        bad -= text[-4:].count("\ufffd")
    return bad / len(text) < 0.01


def guess_from_name(name: str) -> str | None:
    guessed, _ = _types().guess_type(name, strict=False)
    return normalize_media_type(guessed)


def detect_media_type(name: str, data: bytes, *, text: bool) -> str:
    """The media type to store for a new file.

    Text content is `text/plain` unless the name says which text (`text/markdown`,
    `application/json`…): extensions such as `.ts` (MPEG transport stream) must not make source
    code look binary. Binary content is sniffed, then named, then `application/octet-stream`.
    """
    by_name = guess_from_name(name)
    sniffed = None if text else sniff(data)
    if text or (sniffed is None and looks_like_text(data)):
        if by_name and (is_text_media_type(by_name) or by_name == "image/svg+xml"):
            return by_name
        return "text/plain"
    return sniffed or by_name or "application/octet-stream"
