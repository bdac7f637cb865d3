"""Every Think agent has a workspace: its tools come first in every turn, clients can list it."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from think import Think, open_agent, tool
from think.models.base import FileContent, ToolMessage, UserMessage
from think.runtime.rpc import callable_info
from think.sandbox.bash import BashOptions
from think.testing.models import ScriptedModel, call
from think.workspace import Workspace, WorkspaceChange

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


@tool
def read(path: str) -> str:
    """The user's own read tool."""
    return f"mine: {path}"


class Plain(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(["hi"])


class OwnRead(Plain):
    workspace_bash = False

    def get_tools(self) -> list[Any]:
        return [read]


class Limited(Plain):
    workspace_bash = BashOptions(timeout=5)


async def test_workspace_tools_come_first_and_user_tools_win(data_dir: Path) -> None:
    async with open_agent(Plain, "a", data_dir=data_dir) as agent:
        assert isinstance(agent.workspace, Workspace)
        assert list(agent.all_tools()) == ["read", "write", "edit", "list", "find", "grep", "delete", "bash"]
        assert agent.all_tools() is not agent.all_tools() and agent.workspace_tools() is agent.workspace_tools()
    async with open_agent(OwnRead, "b", data_dir=data_dir) as own:
        tools = own.all_tools()
        assert list(tools) == ["read", "write", "edit", "list", "find", "grep", "delete"]
        assert tools["read"] is read
    async with open_agent(Limited, "c", data_dir=data_dir) as limited:
        assert "5 s time limit" in limited.all_tools()["bash"].description


async def test_the_workspace_lives_in_the_agents_database(data_dir: Path) -> None:
    async with open_agent(Plain, "persist", data_dir=data_dir) as agent:
        await agent.workspace.write_file("/notes.md", "# kept")
        await agent.workspace.write_file("/big.bin", b"b" * 2_000_000)
        db_path = Path(agent.db.path)
    assert (db_path.parent / (db_path.name + ".blobs")).is_dir()
    async with open_agent(Plain, "persist", data_dir=data_dir) as again:  # after hibernation
        assert await again.workspace.read_file("/notes.md") == "# kept"
        assert len(await again.workspace.read_bytes("/big.bin") or b"") == 2_000_000


async def test_clients_can_list_the_workspace_and_follow_changes(data_dir: Path) -> None:
    async with open_agent(Plain, "ui", data_dir=data_dir) as agent:
        events: list[WorkspaceChange] = []
        agent.workspace.on_change(events.append)
        await agent.workspace.write_file("/src/app.py", "print(1)\n")
        assert callable_info(agent.list_workspace) is not None
        listing = await agent.list_workspace()
        assert [(e["name"], e["type"]) for e in listing] == [("src", "directory")]
        [entry] = await agent.list_workspace("/src")
        assert {k: entry[k] for k in ("path", "name", "type", "mimeType", "size")} == {
            "path": "/src/app.py", "name": "app.py", "type": "file", "mimeType": "text/x-python", "size": 9}
        assert [e.to_json() for e in events] == [
            {"type": "create", "path": "/src", "entryType": "directory"},
            {"type": "create", "path": "/src/app.py", "entryType": "file"}]


class Writer(Think):
    model = ScriptedModel([
        [call("write", path="/hello.txt", content="hello\nworld\n", id="w1")],
        [call("edit", path="/hello.txt", old_string="world", new_string="there", id="e1"),
         call("read", path="/dot.png", id="r1")],
        "Done.",
    ])
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return self.model


async def test_a_turn_uses_the_file_tools_and_the_model_sees_the_image(data_dir: Path) -> None:
    async with open_agent(Writer, "w", data_dir=data_dir) as agent:
        await agent.workspace.write_file("/dot.png", PNG)
        result = await agent.save_messages(["Write a file, fix it, look at the picture."])
        assert result.status == "completed"
        assert await agent.workspace.read_file("/hello.txt") == "hello\nthere\n"
        parts = [p for p in agent.messages[-1].to_json()["parts"] if p["type"].startswith("tool-")]
        assert [(p["type"], p["state"]) for p in parts] == [
            ("tool-write", "output-available"), ("tool-edit", "output-available"), ("tool-read", "output-available")]
        assert parts[0]["output"] == {"path": "/hello.txt", "bytesWritten": 12, "lines": 3}
        assert parts[2]["output"]["kind"] == "image"
        # The third model call got the image as a file in a user message after the tool results.
        messages = Writer.model.requests[2].messages
        assert isinstance(messages[-2], ToolMessage)
        assert [r.output for r in messages[-2].results] == [
            {"path": "/hello.txt", "replaced": True, "lines": 3}, "Read /dot.png (image/png, 32 B)."]
        assert messages[-1] == UserMessage((FileContent(
            "image/png", "data:image/png;base64," + base64.b64encode(PNG).decode(), "dot.png"),))
        # A later turn converts the stored transcript the same way.
        Writer.model.script = ["Still here."]
        Writer.model.requests.clear()
        await agent.save_messages(["And now?"])
        history = Writer.model.requests[0].messages
        assert sum(isinstance(m, UserMessage) and isinstance(m.content[0], FileContent) for m in history) == 1
