"""The file tools: `read`, `write`, `edit`, `list`, `find`, `grep`, `delete` (and `bash`).

Each factory takes the narrow operations it needs (`think.workspace.operations`), so the same tool
runs over a `Workspace` or any storage you implement:

    tools = create_workspace_tools(agent.workspace)              # all seven, over the workspace
    read = create_read_tool(ops=MyFiles())                        # one tool, your storage

Inputs and outputs follow the original Think's workspace tools. Failures the model should see
(a missing file, an ambiguous edit, a quota) are outputs of the form `{"error": "..."}`.

An image or PDF read by `read` comes back as a *file output*: a dict with `"type": "file"`, its
`mediaType` and its bytes as a `data:` URL in `data` (see `think.models.base.split_file_output`),
which the model request carries to multimodal models as a file, while clients see the metadata.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from think.tools.tool import Tool, tool
from think.workspace.errors import WorkspaceError
from think.workspace.media import (
    GENERIC,
    format_size,
    is_text_media_type,
    looks_like_text,
    normalize_media_type,
    sniff,
)
from think.workspace.operations import (
    DeleteOps,
    EditOps,
    FileInfo,
    FindOps,
    GrepOps,
    ListOps,
    ReadOps,
    WriteOps,
)
from think.workspace.search import InvalidQuery, QueryTooSlow, search_files

if TYPE_CHECKING:
    from think.sandbox.bash import BashOptions
    from think.workspace.workspace import Workspace

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_MODEL_FILE_BYTES = int(3.5 * 1024 * 1024)
MAX_LISTED = 200
MODEL_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Images every multimodal provider accepts; other images (SVG, BMP…) are read as text or binary."""
WORKSPACE_TOOL_NAMES = ("read", "write", "edit", "list", "find", "grep", "delete")

Output = dict[str, Any]


def _errors_as_output(fn: Callable[..., Awaitable[Output]]) -> Callable[..., Awaitable[Output]]:
    """Workspace failures become `{"error": ...}` for the model; other exceptions are bugs."""

    @functools.wraps(fn)
    async def run(*args: Any, **kwargs: Any) -> Output:
        try:
            return await fn(*args, **kwargs)
        except WorkspaceError as exc:
            return {"error": str(exc)}

    return run


# ---- read ---------------------------------------------------------------------------------------


async def _media_type(ops: ReadOps, path: str, info: FileInfo) -> str:
    stored = normalize_media_type(info.mime_type)
    if stored and stored not in GENERIC:
        return stored
    data = await ops.read_bytes(path)
    if data is None:
        return stored or "application/octet-stream"
    return sniff(data) or ("text/plain" if looks_like_text(data) else "application/octet-stream")


def _numbered(content: str, offset: int | None, limit: int | None, path: str) -> Output:
    lines = content.split("\n")
    total = len(lines)
    start = offset - 1 if offset else 0
    end = start + limit if limit else total
    shown = [f"{start + i + 1}\t{line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + '... (truncated)'}"
             for i, line in enumerate(lines[start:end])]
    text = "\n".join(shown[:MAX_LINES])
    if len(shown) > MAX_LINES:
        text += f"\n... ({len(shown) - MAX_LINES} more lines truncated)"
    result: Output = {"path": path, "content": text, "totalLines": total}
    if offset or limit:
        result["fromLine"] = start + 1
        result["toLine"] = min(end, total)
    return result


def create_read_tool(*, ops: ReadOps) -> Tool:
    @tool(name="read")
    @_errors_as_output
    async def read(path: str, offset: Annotated[int, Field(ge=1)] | None = None,
                   limit: Annotated[int, Field(ge=1)] | None = None) -> Output:
        """Read a workspace file. Text files return line-numbered content ("<line>\\t<text>"); use
        offset and limit for large files. Images and PDFs are passed to capable models as file
        content. Paths are absolute, starting at / (the workspace root); there is no /workspace or
        /home.

        Args:
            path: Absolute path to the file.
            offset: 1-indexed line number to start reading from.
            limit: Number of lines to read.
        """
        info = await ops.stat(path)
        if info is None:
            return {"error": f"File not found: {path}"}
        if info.type == "directory":
            return {"error": f"{path} is a directory, not a file"}
        media = await _media_type(ops, path, info)
        described = {"path": path, "name": info.name, "mediaType": media, "sizeBytes": info.size}
        if media in MODEL_IMAGE_TYPES or media == "application/pdf":
            data = await ops.read_bytes(path)
            if data is None:
                return {"error": f"Could not read file: {path}"}
            note = f"Read {path} ({media}, {format_size(len(data))})."
            if len(data) > MAX_MODEL_FILE_BYTES:
                return {"error": f"{note[:-1]}, but it exceeds the {format_size(MAX_MODEL_FILE_BYTES)} "
                                 "inline model output limit."}
            kind = "image" if media.startswith("image/") else "file"
            encoded = base64.b64encode(data).decode("ascii")
            return {"type": "file", "kind": kind, **described, "text": note,
                    "data": f"data:{media};base64,{encoded}"}
        if not (is_text_media_type(media) or media == "image/svg+xml"):
            return {"kind": "binary", **described, "unsupported": True}
        content = await ops.read_file(path)
        if content is None:
            return {"error": f"Could not read file: {path}"}
        return _numbered(content, offset, limit, path)

    return read


# ---- write and edit -----------------------------------------------------------------------------


def create_write_tool(*, ops: WriteOps) -> Tool:
    @tool(name="write")
    @_errors_as_output
    async def write(path: str, content: str) -> Output:
        """Write content to a file. Creates the file if it does not exist, overwrites it if it does.
        Parent directories are created automatically. Paths are absolute, starting at / (the
        workspace root); there is no /workspace or /home.

        Args:
            path: Absolute path to the file.
            content: Content to write to the file.
        """
        parent = path.rstrip("/").rpartition("/")[0]
        if parent and parent != "/":
            await ops.mkdir(parent, recursive=True)
        await ops.write_file(path, content)
        return {"path": path, "bytesWritten": len(content.encode("utf-8")), "lines": content.count("\n") + 1}

    return write


def _count(text: str, search: str) -> int:
    """Occurrences of `search`, overlapping ones included (as the original counts them)."""
    count, position = 0, text.find(search)
    while position != -1:
        count += 1
        position = text.find(search, position + 1)
    return count


def _normalize_whitespace(text: str) -> str:
    return re.sub(r"[ \t]+", " ", text).replace("\r\n", "\n")


def _to_original(original: str, normalized_position: int) -> int:
    """Map a position in the whitespace-normalized text back to the original text."""
    ni = oi = 0
    n = len(original)
    while ni < normalized_position and oi < n:
        ch = original[oi]
        if ch == "\r" and oi + 1 < n and original[oi + 1] == "\n":
            oi += 2
        elif ch in " \t":
            oi += 1
            while oi < n and original[oi] in " \t":
                oi += 1
        else:
            oi += 1
        ni += 1
    return oi


def fuzzy_replace(content: str, old: str, new: str) -> str | bool | None:
    """Replace the one match of `old` after collapsing runs of spaces and tabs and CRLF line ends.

    Returns the new text, None when there is no match, or False when the match is ambiguous.
    """
    haystack, needle = _normalize_whitespace(content), _normalize_whitespace(old)
    if not needle:
        return None
    index = haystack.find(needle)
    if index == -1:
        return None
    if haystack.find(needle, index + len(needle)) != -1:
        return False
    start, end = _to_original(content, index), _to_original(content, index + len(needle))
    return content[:start] + new + content[end:]


def create_edit_tool(*, ops: EditOps) -> Tool:
    @tool(name="edit")
    @_errors_as_output
    async def edit(path: str, old_string: str, new_string: str) -> Output:
        """Make a targeted edit to a file by replacing an exact string match. The old_string must match
        exactly once (including whitespace and indentation); include surrounding lines to make it
        unique. Use an empty old_string with new_string to create a new file. Paths are absolute,
        starting at / (the workspace root); there is no /workspace or /home.

        Args:
            path: Absolute path to the file.
            old_string: Exact text to find and replace. Empty string to create a new file.
            new_string: Replacement text.
        """
        if old_string == "":
            if await ops.read_file(path) is not None:
                return {"error": "File already exists. Provide old_string to edit, or use the write tool to "
                                 "overwrite."}
            await ops.write_file(path, new_string)
            return {"path": path, "created": True, "lines": new_string.count("\n") + 1}
        content = await ops.read_file(path)
        if content is None:
            return {"error": f"File not found: {path}"}
        occurrences = _count(content, old_string)
        if occurrences == 0:
            replaced = fuzzy_replace(content, old_string, new_string)
            if replaced is False:
                return {"error": "old_string matches multiple locations after whitespace normalization. "
                                 "Include more surrounding context to make the match unique."}
            if isinstance(replaced, str):
                await ops.write_file(path, replaced)
                return {"path": path, "replaced": True, "fuzzyMatch": True, "lines": replaced.count("\n") + 1}
            return {"error": "old_string not found in file. Make sure it matches exactly, including whitespace "
                             "and indentation. Read the file first to verify."}
        if occurrences > 1:
            return {"error": f"old_string appears {occurrences} times in the file. Include more surrounding "
                             "context to make the match unique."}
        updated = content.replace(old_string, new_string, 1)
        await ops.write_file(path, updated)
        return {"path": path, "replaced": True, "lines": updated.count("\n") + 1}

    return edit


# ---- list, find, grep, delete -------------------------------------------------------------------


def create_list_tool(*, ops: ListOps) -> Tool:
    @tool(name="list")
    @_errors_as_output
    async def list_(path: str = "/", limit: Annotated[int, Field(ge=1, le=1000)] | None = None,
                    offset: Annotated[int, Field(ge=0)] | None = None) -> Output:
        """List files and directories in a directory: directories first (with a trailing /), then
        files with their sizes. Paths are absolute, starting at / (the workspace root); there is no
        /workspace or /home.

        Args:
            path: Absolute path to the directory to list.
            limit: Maximum number of entries to return (default: 200).
            offset: Number of entries to skip (for pagination).
        """
        entries = await ops.list(path, limit=limit or MAX_LISTED, offset=offset or 0)
        formatted = [f"{e.name}/" if e.type == "directory" else f"{e.name} ({format_size(e.size)})" for e in entries]
        return {"path": path, "count": len(entries), "entries": formatted}

    return list_


def create_find_tool(*, ops: FindOps) -> Tool:
    @tool(name="find")
    @_errors_as_output
    async def find(pattern: str) -> Output:
        """Find files matching a glob pattern: * matches within a directory, ** matches across
        directories, ? matches one character. Returns matching paths (directories end with /).
        Paths are absolute, starting at / (the workspace root); there is no /workspace or /home.

        Args:
            pattern: Glob pattern to match (e.g. "**/*.py", "src/**/test_*.py", "*.md").
        """
        matches = await ops.glob(pattern)
        result: Output = {"pattern": pattern, "count": len(matches),
                          "files": [m.path + ("/" if m.type == "directory" else "") for m in matches[:MAX_LISTED]]}
        if len(matches) > MAX_LISTED:
            result["truncated"] = True
            result["showing"] = MAX_LISTED
        return result

    return find


def create_grep_tool(*, ops: GrepOps) -> Tool:
    @tool(name="grep")
    @_errors_as_output
    async def grep(query: str, include: str | None = None, fixedString: bool = False,
                   caseSensitive: bool = False,
                   contextLines: Annotated[int, Field(ge=0, le=10)] | None = None) -> Output:
        """Search file contents with a regular expression or a fixed string. Returns matching lines
        with file paths and line numbers; stops at 200 matches and skips files over 1 MB. Paths are
        absolute, starting at / (the workspace root); there is no /workspace or /home.

        Args:
            query: Search pattern (regex or fixed string).
            include: Glob pattern to filter files (e.g. "**/*.py"). Defaults to "**/*".
            fixedString: If true, treat query as a literal string instead of a regex.
            caseSensitive: If true, the search is case-sensitive (default: false).
            contextLines: Number of context lines around each match (0-10, default: 0).
        """
        try:
            found = await search_files(ops, query, include=include or "**/*", fixed=fixedString,
                                       case_sensitive=caseSensitive, context_lines=contextLines or 0)
        except QueryTooSlow as exc:
            return {"error": str(exc)}
        except InvalidQuery:
            return {"error": f"Invalid regex: {query}"}
        result: Output = {
            "query": query, "filesSearched": found.files_searched, "filesWithMatches": found.files_with_matches,
            "totalMatches": found.total_matches,
            "matches": [{"file": m.path, "line": m.line, "context": "\n".join(m.context)} if m.context is not None
                        else f"{m.path}:{m.line}: {m.text}" for m in found.matches],
        }
        if found.truncated:
            result["truncated"] = True
        if found.files_skipped:
            result["filesSkipped"] = found.files_skipped
            result["note"] = f"{found.files_skipped} file(s) skipped (larger than 1 MB)"
        return result

    return grep


def create_delete_tool(*, ops: DeleteOps) -> Tool:
    @tool(name="delete")
    @_errors_as_output
    async def delete(path: str, recursive: bool = False) -> Output:
        """Delete a file or directory. Set recursive to true to remove a non-empty directory and
        everything in it. Paths are absolute, starting at / (the workspace root); there is no
        /workspace or /home.

        Args:
            path: Absolute path to the file or directory.
            recursive: If true, remove directories and their contents recursively.
        """
        await ops.rm(path, recursive=recursive, force=True)
        return {"deleted": path}

    return delete


def create_workspace_tools(workspace: Workspace, *, bash: bool | BashOptions = False) -> dict[str, Tool]:
    """`read`, `write`, `edit`, `list`, `find`, `grep` and `delete` over `workspace`, plus `bash`
    (a sandboxed shell over a snapshot of it) when `bash` is True or a `BashOptions`."""
    tools = {
        "read": create_read_tool(ops=workspace),
        "write": create_write_tool(ops=workspace),
        "edit": create_edit_tool(ops=workspace),
        "list": create_list_tool(ops=workspace),
        "find": create_find_tool(ops=workspace),
        "grep": create_grep_tool(ops=workspace),
        "delete": create_delete_tool(ops=workspace),
    }
    if bash is not False:
        from think.sandbox.bash import BashOptions, create_bash_tool

        tools["bash"] = create_bash_tool(workspace, BashOptions() if bash is True else bash)
    return tools
