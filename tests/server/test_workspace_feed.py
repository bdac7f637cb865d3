"""The workspace feed: a burst of changes is one `think_workspace_change` frame, sent from a task of
its own after the burst, to every connection; nothing is queued when nobody is connected."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
from anyio.abc import TaskGroup

from think.server.connection import Connection, Connections
from think.server.workspace import MAX_CHANGES_PER_FRAME, WorkspaceFeed
from think.storage import Database
from think.workspace import Workspace


class Recorder:
    """A socket that keeps what it is sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def send_text(self, data: str) -> None:
        self.sent.append(data)

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        pass


class Host:
    def __init__(self, tasks: TaskGroup) -> None:
        self.tasks = tasks
        self.spawned = 0

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        self.spawned += 1
        self.tasks.start_soon(fn)


def queued(connection: Connection) -> list[Any]:
    return [orjson.loads(text) for text in connection._queue]


def changes(connection: Connection) -> list[tuple[str, str, str]]:
    return [(c["kind"], c["path"], c["entryType"]) for frame in queued(connection) for c in frame["changes"]]


@asynccontextmanager
async def fed(*, tabs: int = 2) -> AsyncIterator[tuple[Workspace, list[Connection], Host]]:
    """A workspace whose feed reports to `tabs` connections (the task group stands in for the host)."""
    workspace = Workspace(Database(":memory:"))
    connections = Connections()
    opened = [Connection(Recorder(), f"tab{i}") for i in range(tabs)]
    for tab in opened:
        connections.add(tab)
    async with anyio.create_task_group() as tasks:
        host = Host(tasks)
        feed = WorkspaceFeed(workspace, connections, host.spawn, delay=0.02)
        feed.open()
        try:
            yield workspace, opened, host
        finally:
            feed.close()


async def test_a_burst_is_one_frame_to_every_connection_sent_after_the_burst() -> None:
    async with fed() as (workspace, tabs, host):
        await workspace.write_file("/src/app.py", "print(1)\n")
        await workspace.write_file("/src/app.py", "print(2)\n")  # a new file written again is still new
        await workspace.write_file("/README.md", "# hi\n")
        await workspace.mv("/README.md", "/docs/README.md")
        await workspace.rm("/src", recursive=True)
        assert [queued(tab) for tab in tabs] == [[], []]  # nothing is sent inside the writer's task
        await anyio.sleep(0.1)
        assert host.spawned == 1
        for tab in tabs:
            [frame] = queued(tab)
            assert frame["type"] == "think_workspace_change"
            assert changes(tab) == [
                ("create", "/src", "directory"), ("create", "/src/app.py", "file"), ("create", "/README.md", "file"),
                ("create", "/docs", "directory"), ("delete", "/README.md", "file"),
                ("create", "/docs/README.md", "file"), ("delete", "/src", "directory")]


async def test_updates_of_one_file_in_a_burst_are_one_change() -> None:
    async with fed(tabs=1) as (workspace, [tab], _):
        await workspace.write_file("/log.txt", "a")
        await anyio.sleep(0.1)
        for line in range(20):
            await workspace.append_file("/log.txt", f"line {line}\n")
        await anyio.sleep(0.1)
        assert [[c["kind"] for c in frame["changes"]] for frame in queued(tab)] == [["create"], ["update"]]


async def test_a_huge_burst_is_split_into_frames() -> None:
    async with fed(tabs=1) as (workspace, [tab], _):
        count = MAX_CHANGES_PER_FRAME + 10
        result = await workspace.apply(writes={f"/out/{i:04}.txt": b"x" for i in range(count)})
        assert not result.errors
        await anyio.sleep(0.1)
        frames = queued(tab)
        assert [len(f["changes"]) for f in frames] == [MAX_CHANGES_PER_FRAME, count + 1 - MAX_CHANGES_PER_FRAME]
        assert changes(tab)[0] == ("create", "/out", "directory")
        assert changes(tab)[-1] == ("create", f"/out/{count - 1:04}.txt", "file")


async def test_without_connections_nothing_is_queued_and_close_stops_the_feed() -> None:
    workspace = Workspace(Database(":memory:"))
    connections = Connections()
    async with anyio.create_task_group() as tasks:
        host = Host(tasks)
        feed = WorkspaceFeed(workspace, connections, host.spawn, delay=0.02)
        feed.open()
        await workspace.write_file("/alone.txt", "nobody is watching")
        assert host.spawned == 0
        tab = Connection(Recorder(), "late")
        connections.add(tab)
        await workspace.write_file("/seen.txt", "now somebody is")
        feed.close()  # sends what is queued, then stops listening
        assert changes(tab) == [("create", "/seen.txt", "file")]
        await workspace.write_file("/after.txt", "too late")
        await anyio.sleep(0.05)
    assert changes(tab) == [("create", "/seen.txt", "file")]
