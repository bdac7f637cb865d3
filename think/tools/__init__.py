"""Tool definition and execution."""

from think.tools.run import ToolResult, run_tool
from think.tools.tool import InvalidToolInput, Tool, ToolContext, as_tool_map, client_tool, tool

__all__ = ["InvalidToolInput", "Tool", "ToolContext", "ToolResult", "as_tool_map", "client_tool", "run_tool", "tool"]
