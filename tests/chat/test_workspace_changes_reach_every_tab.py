"""Workspace changes reach every tab of the agent as `think_workspace_change` frames, whoever makes
them (the `write` tool, `bash`, code calling `self.workspace`); clients list and read the workspace
over RPC, and bad paths are answered with clear errors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.chat.live_server import LiveServer, serve_in_thread
from think import Think, callable
from think.client import AgentClient, RpcError
from think.models.base import ModelRequest, ToolMessage
from think.protocol.frames import FileChange, ServerFrame, WorkspaceChanged
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.testing.models import Reply, ScriptedModel, call

BASH_FILES = 120
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
HUGE = 20 * 1024 * 1024
GENERATE = f"mkdir -p /gen && for i in $(seq 1 {BASH_FILES}); do echo \"file $i\" > /gen/f$i.txt; done"


def script(request: ModelRequest) -> Reply:
    """`write` → the write tool; `bash` → a script that writes many files; after a tool: `Done.`"""
    if isinstance(request.messages[-1], ToolMessage):
        return "Done."
    said = request.last_user_text
    if said.startswith("write"):
        return call("write", path="/notes/todo.md", content="- ship it\n")
    if said.startswith("bash"):
        return call("bash", script=GENERATE)
    return "Nothing to do."


class FilesChat(Think):
    model = ScriptedModel(script)

    def get_model(self) -> ScriptedModel:
        return self.model

    @callable
    async def touch(self, path: str, kind: str = "text") -> None:
        """User code writing the workspace directly, outside any turn: `touched\n`, a PNG, or 20 MB."""
        content = {"text": b"touched\n", "png": PNG, "huge": b"x" * HUGE}[kind]
        await self.workspace.write_file(path, content)


@pytest.fixture
def files_server(tmp_path: Path) -> Iterator[LiveServer]:
    app = create_app([FilesChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        yield live


@pytest.fixture
def open_tab(files_server: LiveServer) -> Any:
    def opener(name: str, **options: Any) -> AbstractAsyncContextManager[AgentClient]:
        @asynccontextmanager
        async def tab() -> AsyncIterator[AgentClient]:
            options.setdefault("turn_timeout", 20)
            options.setdefault("wait_timeout", 10)
            async with AgentClient.connect(files_server.agent_url("files-chat", name), **options) as client:
                yield client

        return tab()

    return opener


def change_frames(frames: list[ServerFrame]) -> list[WorkspaceChanged]:
    return [f for f in frames if isinstance(f, WorkspaceChanged)]


def count(n: int) -> Any:
    return lambda client: len(client.workspace_changes) >= n


@pytest.mark.usefixtures("bubblewrap")
async def test_tool_bash_and_code_changes_reach_the_sender_and_a_second_tab(open_tab: Any) -> None:
    frames_a: list[ServerFrame] = []
    frames_b: list[ServerFrame] = []
    async with open_tab("files", on_frame=frames_a.append) as a, open_tab("files", on_frame=frames_b.append) as b:
        assert change_frames(frames_a) == change_frames(frames_b) == []  # nothing changed yet

        # The write tool, in a turn started by tab A.
        turn = await (await a.send_chat("write a todo list"))
        assert turn.outcome == "completed" and turn.message.text.endswith("Done.")
        written = [FileChange("create", "/notes", "directory"), FileChange("create", "/notes/todo.md", "file")]
        for tab in (a, b):
            await tab.wait_until(count(2))
            assert list(tab.workspace_changes) == written
        assert change_frames(frames_a) == change_frames(frames_b) == [WorkspaceChanged(tuple(written))]

        # bash writes back a burst of files: one frame, not one per file.
        await (await b.send_chat("bash: generate files"))
        for tab in (a, b):
            await tab.wait_until(count(2 + 1 + BASH_FILES))
        [burst] = change_frames(frames_a)[1:]
        assert change_frames(frames_b)[1:] == [burst]
        assert burst.changes[0] == FileChange("create", "/gen", "directory")
        assert sorted(c.path for c in burst.changes[1:]) == sorted(f"/gen/f{i}.txt" for i in range(1, BASH_FILES + 1))
        assert {(c.kind, c.entry_type) for c in burst.changes[1:]} == {("create", "file")}

        # Code calling self.workspace (here from an RPC method): an update, then a new file.
        await a.call("touch", "/notes/todo.md")
        await a.call("touch", "/notes/more.md")
        for tab in (a, b):
            await tab.wait_until(count(2 + 1 + BASH_FILES + 2))
            assert list(tab.workspace_changes)[-2:] == [FileChange("update", "/notes/todo.md", "file"),
                                                        FileChange("create", "/notes/more.md", "file")]

        # What the frames said is what the workspace holds.
        listing = await b.call("list_workspace", "/notes")
        assert [(e["name"], e["type"]) for e in listing] == [("more.md", "file"), ("todo.md", "file")]
        todo = await b.call("read_workspace_file", "/notes/todo.md")
        assert (todo["path"], todo["mimeType"], todo["content"]) == ("/notes/todo.md", "text/markdown", "touched\n")
        generated = await a.call("read_workspace_file", "/gen/f7.txt")
        assert generated["content"] == "file 7\n"


async def test_a_tab_that_joins_later_gets_only_new_changes(open_tab: Any) -> None:
    async with open_tab("late") as a:
        await a.call("touch", "/before.txt")
        await a.wait_until(count(1))
        async with open_tab("late") as b:
            assert list(b.workspace_changes) == []  # it lists the workspace itself
            assert [e["path"] for e in await b.call("list_workspace")] == ["/before.txt"]
            await a.call("touch", "/after.txt")
            await b.wait_until(count(1))
            assert list(b.workspace_changes) == [FileChange("create", "/after.txt", "file")]


@pytest.mark.parametrize(("method", "args", "error"), [
    ("read_workspace_file", ("/missing.txt",), "ENOENT: no such file: /missing.txt"),
    ("read_workspace_file", ("/docs",), "EISDIR: /docs is a directory, not a file (list it with list_workspace)"),
    ("read_workspace_file", ("/",), "EISDIR: / is a directory"),
    ("read_workspace_file", (7,), "EINVAL: a path must be a string, not int"),
    ("read_workspace_file", ("/docs/a.txt", "big"), "EINVAL: max_bytes must be a positive integer, not 'big'"),
    ("read_workspace_file", ("/a\u0000b",), "EINVAL: a path cannot contain NUL bytes"),
    ("list_workspace", ("/nowhere",), "ENOENT: no such directory: /nowhere"),
    ("list_workspace", ("/docs/a.txt",), "ENOTDIR: /docs/a.txt is not a directory"),
])
async def test_bad_paths_get_clear_errors_over_rpc(open_tab: Any, method: str, args: tuple[Any, ...],
                                                   error: str) -> None:
    async with open_tab("errors") as client:
        await client.call("touch", "/docs/a.txt")
        with pytest.raises(RpcError) as caught:
            await client.call(method, *args)
        assert str(caught.value).startswith(f"{method}: {error}")
        assert (await client.call("read_workspace_file", "/docs/a.txt"))["content"] == "touched\n"


async def test_binary_and_large_files_are_described_not_shipped(open_tab: Any) -> None:
    frames: list[ServerFrame] = []
    async with open_tab("sizes", on_frame=frames.append) as client:
        await client.call("touch", "/dot.png", "png")
        await client.call("touch", "/huge.log", "huge")
        await client.call("touch", "/small.txt")
        dot = await client.call("read_workspace_file", "/dot.png")
        assert (dot["mimeType"], dot["content"], dot["reason"]) == ("image/png", None, "binary")
        assert dot["note"] == "/dot.png is a binary file (image/png, 32 B); it is not shown as text."
        huge = await client.call("read_workspace_file", "/huge.log")
        assert (huge["content"], huge["reason"], huge["size"]) == (None, "too-large", HUGE)
        assert huge["note"] == "/huge.log is 20.0 MB, over the 1.0 MB that can be shown here."
        small = await client.call("read_workspace_file", "/small.txt", 3)
        assert (small["content"], small["reason"]) == (None, "too-large")
        assert small["note"] == "/small.txt is 8 B, over the 3 B that can be shown here."
        listing = await client.call("list_workspace", "/")
        assert [(e["path"], e["size"]) for e in listing] == [("/dot.png", 32), ("/huge.log", HUGE), ("/small.txt", 8)]
    # Nothing the client received came near the size of the big file.
    assert max(len(repr(f)) for f in frames) < 10_000
