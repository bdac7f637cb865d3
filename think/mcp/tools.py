"""MCP tools as `think.Tool`s: names that cannot collide, the server's schema, outputs the model reads.

A tool `search` of the server `GitHub Docs` becomes `GitHub_Docs_search` (letters, digits, `_`
and `-`, at most 64 characters, what every provider accepts); its description starts with the
server and the original name. The input schema is the server's, as declared.

A result becomes a tool output: an `isError` result is a tool error with the server's text;
text content is the output (long texts are cut at `MAX_OUTPUT_CHARS` with a note, as the bash
tool's output is); structured content is the output when the server gives more than its text;
an image (or audio) is a file output (`think.models.base.split_file_output`) that models see as
an attachment. A call to a server that is not connected or drops meanwhile, or that times out,
is a tool error the model reads; the turn goes on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import orjson
from mcp.types import AudioContent, CallToolResult, EmbeddedResource, ImageContent, ResourceLink, TextContent
from mcp.types import Tool as MCPTool

from think.errors import ToolFailed
from think.mcp.errors import MCPServerUnavailable, describe
from think.messages import JSONObject
from think.tools.tool import Tool, ToolContext

MAX_OUTPUT_CHARS = 64_000
"""Characters of a tool's text (or structured JSON) output the model gets; the rest is cut."""
MAX_FILE_BYTES = 5_000_000
"""Base64 characters of one image or audio part kept as a file output."""
MAX_NAME = 64

CallTool = Callable[[str, dict[str, Any]], Any]
"""`call(original_name, arguments)` → an awaitable `CallToolResult` (raises when unavailable)."""


def sanitize(text: str) -> str:
    """`text` with every character outside `[A-Za-z0-9_-]` replaced by `_`."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text).strip("_") or "mcp"


def tool_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """`<server>_<tool>` sanitised and at most `MAX_NAME` long, unique among `taken`."""
    base = f"{sanitize(server)}_{sanitize(tool)}"[:MAX_NAME]
    name, n, used = base, 2, set(taken)
    while name in used:
        suffix = f"_{n}"
        name, n = base[: MAX_NAME - len(suffix)] + suffix, n + 1
    return name


def _schema(tool: MCPTool) -> JSONObject:
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    if schema.get("type") != "object":  # malformed: the model still gets an object schema
        return {"type": "object", "properties": {}}
    return dict(schema)


def as_tool(server: str, mcp_tool: MCPTool, name: str, call: CallTool) -> Tool:
    """The think tool for one MCP tool of `server`."""
    original = mcp_tool.name
    about = mcp_tool.description or mcp_tool.title or ""
    description = f"[MCP server {server!r}, tool {original!r}] {about}".strip()

    async def execute(arguments: JSONObject, ctx: ToolContext) -> Any:
        try:
            result = await call(original, dict(arguments))
        except (MCPServerUnavailable, TimeoutError) as exc:
            raise ToolFailed(str(exc)) from None
        except Exception as exc:
            raise ToolFailed(f"MCP tool {original!r} of {server!r} failed: {describe(exc)}") from None
        return tool_output(result)

    return Tool(name=name, description=description, input_schema=_schema(mcp_tool), execute=execute,
                title=mcp_tool.title)


def _cut(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n... ({len(text) - MAX_OUTPUT_CHARS} characters truncated)"


def _texts(result: CallToolResult) -> list[str]:
    texts: list[str] = []
    for part in result.content:
        if isinstance(part, TextContent):
            texts.append(part.text)
        elif isinstance(part, ResourceLink):
            texts.append(f"[resource {part.uri}]")
        elif isinstance(part, EmbeddedResource):
            text = getattr(part.resource, "text", None)
            texts.append(text if isinstance(text, str) else f"[resource {part.resource.uri}]")
    return texts


def tool_output(result: CallToolResult) -> Any:
    """A `CallToolResult` as a think tool output (see the module docstring); raises `ToolFailed`
    for an `isError` result."""
    text = "\n".join(_texts(result))
    if result.is_error:
        raise ToolFailed(_cut(text) or "the MCP tool reported an error")
    structured = result.structured_content
    if structured is not None and not _only_wraps(structured, text):
        encoded = orjson.dumps(structured).decode()
        return structured if len(encoded) <= MAX_OUTPUT_CHARS else _cut(encoded)
    files = [p for p in result.content if isinstance(p, ImageContent | AudioContent)]
    if files:
        first = files[0]
        note = text or f"{len(files)} {'file' if len(files) == 1 else 'files'} from the tool"
        if len(first.data) > MAX_FILE_BYTES:
            return _cut(f"{note} ({first.mime_type}, {len(first.data)} base64 characters: too large to attach)")
        if len(files) > 1:
            note += f" ({len(files) - 1} more not attached)"
        return {"type": "file", "mediaType": first.mime_type, "data": f"data:{first.mime_type};base64,{first.data}",
                "text": _cut(note)}
    return _cut(text)


def _only_wraps(structured: dict[str, Any], text: str) -> bool:
    """The SDK wraps a plain return value as `{"result": value}` next to its text: nothing more."""
    if set(structured) != {"result"}:
        return False
    value = structured["result"]
    return (value if isinstance(value, str) else orjson.dumps(value).decode()) == text or str(value) == text
