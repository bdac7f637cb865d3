"""Extensions in real turns: static and model-loaded, restored after a restart, unloaded."""

from __future__ import annotations

from pathlib import Path

from tests.extensions.agents import GREETER, NOTES, Assistant
from think import open_agent
from think.extensions import Extension
from think.messages import ToolPart
from think.testing.models import ScriptedModel, call


def tool_parts(agent: Assistant) -> list[ToolPart]:
    return [p for m in agent.messages for p in m.parts if isinstance(p, ToolPart)]


async def test_the_model_loads_an_extension_and_calls_its_tool_in_the_next_turn(data_dir: Path) -> None:
    Assistant.static = []
    Assistant.model = ScriptedModel([
        call("load_extension", name="My Notes!", version="1.0.0", source=NOTES, workspace_access="read-write"),
        "Loaded.",
        call("My_Notes_save", title="todo", text="- ship it"),
        call("My_Notes_count"),
        "Saved.",
    ])
    async with open_agent(Assistant, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["Write yourself a notes tool"])
        [load] = tool_parts(agent)
        assert load.state == "output-available", load
        assert load.output == {"loaded": True, "name": "My Notes!", "prefix": "My_Notes", "version": "1.0.0",
                               "tools": ["My_Notes_save", "My_Notes_count"],
                               "message": "Loaded My Notes!: My_Notes_save, My_Notes_count can be called from the "
                                          "next turn."}
        first = {t.name for t in Assistant.model.requests[1].tools}
        assert "My_Notes_save" not in first  # the turn's tools were fixed when it started
        await agent.save_messages(["Save a todo"])
        save, count = tool_parts(agent)[1:]
        assert save.output == {"saved": "todo"} and count.output == {"files": 1}
        assert await agent.workspace.read_file("/notes/todo.md") == "- ship it"
        spec = next(t for t in Assistant.model.requests[2].tools if t.name == "My_Notes_save")
        assert spec.description == "[My Notes!] Save a note."
        assert spec.input_schema == {"type": "object", "properties": {"title": {"type": "string"},
                                                                      "text": {"type": "string"}},
                                     "required": ["title", "text"]}
    # A restart restores it from the agent's database.
    Assistant.model = ScriptedModel([call("My_Notes_count"), "Two."])
    async with open_agent(Assistant, "a", data_dir=data_dir) as agent:
        assert [e["name"] for e in agent.extensions.list()] == ["My Notes!"]
        await agent.save_messages(["How many?"])
        assert tool_parts(agent)[-1].output == {"files": 1}
        assert await agent.extensions.unload("My Notes!") is True
        assert agent.extensions.list() == [] and "My_Notes_count" not in agent.extensions.get_tools()
    async with open_agent(Assistant, "a", data_dir=data_dir) as agent:
        assert agent.extensions.list() == []  # unloaded for good


async def test_static_extensions_load_at_start_in_order_and_are_not_stored(data_dir: Path) -> None:
    Assistant.static = [Extension({"name": "greeter", "version": "2.0.0"}, GREETER),
                        Extension({"name": "notes", "permissions": {"workspace": "read-write"}}, NOTES)]
    Assistant.model = ScriptedModel([call("greeter_greet", name="Ada"), "Done."])
    try:
        async with open_agent(Assistant, "s", data_dir=data_dir) as agent:
            assert [(e["name"], e["static"]) for e in agent.extensions.list()] == [("greeter", True), ("notes", True)]
            await agent.save_messages(["Greet Ada"])
            assert tool_parts(agent)[0].output == "Hello, Ada!"
            assert agent.db.value("SELECT count(*) FROM think_extensions") == 0
            assert agent.loaded_extensions()[0]["permissions"]["workspace"] == "none"
    finally:
        Assistant.static = []
