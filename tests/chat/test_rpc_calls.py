"""`@callable` methods answer `rpc` frames: results, streamed chunks, and errors as answers."""

from __future__ import annotations

import pytest

from tests.chat.conftest import Connect
from think.client import RpcError
from think.protocol.frames import RpcResponse, ServerFrame


async def test_a_callable_method_returns_its_result(connect: Connect) -> None:
    async with connect("rpc") as client:
        assert await client.call("add", 2, 3) == 5


async def test_a_streaming_callable_sends_chunks_then_its_result(connect: Connect) -> None:
    async with connect("rpc-stream") as client:
        call = await client.start_call("count", 3)
        assert [chunk async for chunk in call] == [0, 1, 2]
        assert await call.wait() == "counted"


@pytest.mark.parametrize(("method", "args", "error"), [
    ("nope", (), "Method nope does not exist"),
    ("not_exposed", (), "Method not_exposed is not callable"),
    ("__init__", (), "Method __init__ is not callable"),
    ("fail", (), "it went wrong"),
    ("add", (1,), "missing 1 required positional argument: 'b'"),
])
async def test_failures_come_back_as_errors(connect: Connect, method: str, args: tuple[int, ...], error: str) -> None:
    async with connect("rpc-errors") as client:
        with pytest.raises(RpcError, match=error):
            await client.call(method, *args)
        assert await client.call("add", 1, 1) == 2  # the connection is fine


async def test_a_malformed_rpc_frame_gets_an_error_for_its_id(connect: Connect) -> None:
    frames: list[ServerFrame] = []
    async with connect("rpc-bad", on_frame=frames.append) as client:
        await client.send_text('{"type":"rpc","id":"r9","method":"add","args":{"a":1}}')
        await client.wait_until(lambda c: any(isinstance(f, RpcResponse) for f in frames))
        answer = next(f for f in frames if isinstance(f, RpcResponse))
        assert answer.id == "r9" and not answer.success
        assert answer.error == "rpc: args: Input should be a valid list"
