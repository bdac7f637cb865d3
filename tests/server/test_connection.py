"""Connections: ordered, non-blocking sends; broadcast with exclusions; slow clients are closed."""

from __future__ import annotations

import anyio
import anyio.lowlevel

from think.server.connection import Connection, Connections


class FakeSocket:
    def __init__(self) -> None:
        self.sent: list[str] = []
        self.closed: tuple[int, str | None] | None = None
        self.gate = anyio.Event()
        self.block = False

    async def send_text(self, data: str) -> None:
        if self.block:
            await self.gate.wait()
        self.sent.append(data)

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        self.closed = (code, reason)


async def test_frames_are_written_in_order_then_the_close() -> None:
    socket = FakeSocket()
    connection = Connection(socket, "a")
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(connection.run_writer)
        for i in range(5):
            connection.send(f"frame {i}")
        connection.close(1009, "too big")
        connection.send("dropped: the connection is closing")
    assert socket.sent == [f"frame {i}" for i in range(5)] and socket.closed == (1009, "too big")


async def test_broadcast_skips_excluded_ids() -> None:
    sockets = {name: FakeSocket() for name in "abc"}
    connections = Connections()
    for name, socket in sockets.items():
        connections.add(Connection(socket, name))
    connections.broadcast("all")
    connections.broadcast("not a", exclude="a")
    connections.broadcast("only c", exclude={"a", "b"})
    async with anyio.create_task_group() as tasks:
        for connection in connections:
            tasks.start_soon(connection.run_writer)
            connection.close()
    assert {name: s.sent for name, s in sockets.items()} == {
        "a": ["all"], "b": ["all", "not a"], "c": ["all", "not a", "only c"]}
    assert len(connections) == 3


async def test_a_client_that_falls_too_far_behind_is_closed() -> None:
    socket = FakeSocket()
    socket.block = True
    connection = Connection(socket, "slow", max_queued=10)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(connection.run_writer)
        await anyio.lowlevel.checkpoint()
        for i in range(25):
            connection.send(f"frame {i}")
        assert connection.closing
        socket.gate.set()
    assert socket.closed == (1013, "Too slow: the client fell too far behind")
    assert len(socket.sent) <= 1  # what was queued was dropped


async def test_a_peer_that_disconnected_stops_the_writer() -> None:
    socket = FakeSocket()
    connection = Connection(socket, "gone")
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(connection.run_writer)
        await anyio.lowlevel.checkpoint()
        connection.disconnected()
        connection.send("never sent")
    assert socket.sent == [] and socket.closed is None
