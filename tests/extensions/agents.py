"""Agents and extension sources for the extension tests."""

from __future__ import annotations

from typing import Any, ClassVar

from think import Think
from think.extensions import Extension, create_extension_tools
from think.testing.models import ScriptedModel
from think.tools.run import ToolResult, run_tool
from think.tools.tool import ToolContext

NOTES = '''
def save(args, host):
    host.write_file("/notes/" + args["title"] + ".md", args["text"])
    return {"saved": args["title"]}

def count(args, host):
    return {"files": len(host.list_files("/notes"))}

tools = {
    "save": {"description": "Save a note.", "execute": save,
             "parameters": {"title": {"type": "string"}, "text": {"type": "string"}},
             "required": ["title", "text"]},
    "count": {"description": "Count the notes.", "execute": count, "parameters": {}},
}
'''

GREETER = '''
def greet(args, host):
    return "Hello, " + args["name"] + "!"

tools = {"greet": {"description": "Greet someone.", "execute": greet,
                   "parameters": {"type": "object", "properties": {"name": {"type": "string"}},
                                  "required": ["name"]}}}
'''


class Assistant(Think):
    """A scripted agent with the model's extension tools and, optionally, static extensions."""

    model: ClassVar[ScriptedModel] = ScriptedModel([])
    static: ClassVar[list[Extension]] = []
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return type(self).model

    def get_tools(self) -> dict[str, Any]:
        return create_extension_tools(self.extensions, needs_approval=False)

    def get_extensions(self) -> list[Extension]:
        return list(type(self).static)


async def call_tool(agent: Think, tool_name: str, /, **arguments: Any) -> ToolResult:
    """Call a loaded extension's tool outside a turn, as the loop would (input checked first)."""
    tool = agent.extensions.get_tools()[tool_name]
    return await run_tool(tool, tool.check_input(arguments), ToolContext(tool_call_id="t", tool_name=tool_name))
