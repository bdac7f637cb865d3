"""MCP tools and results as think tools and outputs: names, schemas, every kind of content."""

from __future__ import annotations

import pytest
from mcp.types import CallToolResult, EmbeddedResource, ImageContent, TextContent, TextResourceContents, Tool

from think.errors import ToolFailed
from think.mcp.tools import MAX_FILE_BYTES, MAX_NAME, as_tool, sanitize, tool_name, tool_output


def test_names_are_sanitised_bounded_and_unique() -> None:
    assert tool_name("GitHub Docs", "search.code") == "GitHub_Docs_search_code"
    assert sanitize("../../etc") == "etc" and sanitize("???") == "mcp"
    long = tool_name("s" * 50, "t" * 50)
    assert len(long) == MAX_NAME
    assert tool_name("a", "b", taken={"a_b"}) == "a_b_2"
    assert tool_name("a", "b", taken={"a_b", "a_b_2"}) == "a_b_3"
    assert len(tool_name("s" * 50, "t" * 50, taken={long})) == MAX_NAME


async def _no_call(name: str, arguments: dict[str, object]) -> CallToolResult:
    raise AssertionError("not called")


def test_a_malformed_input_schema_becomes_an_empty_object_schema() -> None:
    for schema in ({"type": "array"}, {"type": "string"}, {}):
        tool = as_tool("srv", Tool(name="odd", inputSchema=schema), "srv_odd", _no_call)
        assert tool.input_schema == {"type": "object", "properties": {}}
    kept = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tool = as_tool("srv", Tool(name="ok", description="Find.", inputSchema=kept), "srv_ok", _no_call)
    assert tool.input_schema == kept and tool.description == "[MCP server 'srv', tool 'ok'] Find."


def test_results_become_outputs() -> None:
    text = CallToolResult(content=[TextContent(type="text", text="a"), TextContent(type="text", text="b")])
    assert tool_output(text) == "a\nb"
    wrapped = CallToolResult(content=[TextContent(type="text", text="3")], structuredContent={"result": 3})
    assert tool_output(wrapped) == "3"
    structured = CallToolResult(content=[TextContent(type="text", text="{}")], structuredContent={"n": 1})
    assert tool_output(structured) == {"n": 1}
    embedded = CallToolResult(content=[EmbeddedResource(type="resource", resource=TextResourceContents(
        uri="demo://x", text="inside"))])
    assert tool_output(embedded) == "inside"
    images = CallToolResult(content=[ImageContent(type="image", data="AAAA", mimeType="image/png"),
                                     ImageContent(type="image", data="BBBB", mimeType="image/png")])
    out = tool_output(images)
    assert out["data"] == "data:image/png;base64,AAAA" and "1 more not attached" in out["text"]
    big = CallToolResult(content=[ImageContent(type="image", data="A" * (MAX_FILE_BYTES + 1), mimeType="image/png")])
    assert "too large to attach" in tool_output(big)
    with pytest.raises(ToolFailed, match="nope"):
        tool_output(CallToolResult(content=[TextContent(type="text", text="nope")], isError=True))
    with pytest.raises(ToolFailed, match="reported an error"):
        tool_output(CallToolResult(content=[], isError=True))
