"""permessage-deflate as `think serve` speaks it: short messages go uncompressed, long ones compressed.

A client that negotiates compression (as browsers and the npm clients do) records, for every
frame it receives, whether the server compressed it (RSV1), before decoding it as usual.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.extensions.base import ClientExtensionFactory, Extension
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory, PerMessageDeflate
from websockets.frames import Frame, Opcode
from websockets.typing import ExtensionName, ExtensionParameter

from tests.chat.live_server import serve_in_thread
from tests.chat.test_tool_results_and_continuations import chat_request, recv_until, user
from tests.cli.logged_server import logged_serve
from think import Think
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.server.websocket import COMPRESS_MIN_BYTES, WebSocketProtocol, _SizedExtension
from think.testing.models import ScriptedModel

LONG_ANSWER = "A long answer. " * 400  # its transcript frame is far above the threshold


class Talker(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: LONG_ANSWER if "long" in request.last_user_text else "Short.")


class _Recording(Extension):
    def __init__(self, inner: Extension, seen: list[tuple[bool, int]]) -> None:
        self.inner, self.name, self.seen = inner, inner.name, seen

    def decode(self, frame: Frame, *, max_size: int | None = None) -> Frame:
        decoded = self.inner.decode(frame, max_size=max_size)
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
            self.seen.append((frame.rsv1, len(decoded.data)))
        return decoded

    def encode(self, frame: Frame) -> Frame:
        return self.inner.encode(frame)


class _RecordingFactory(ClientExtensionFactory):
    """The client's permessage-deflate, noting (compressed, decoded size) of each data frame."""

    def __init__(self, seen: list[tuple[bool, int]]) -> None:
        self.inner = ClientPerMessageDeflateFactory()
        self.name: ExtensionName = self.inner.name
        self.seen = seen

    def get_request_params(self) -> Sequence[ExtensionParameter]:
        return self.inner.get_request_params()

    def process_response_params(self, params: Sequence[ExtensionParameter],
                                accepted_extensions: Sequence[Extension]) -> Extension:
        return _Recording(self.inner.process_response_params(params, accepted_extensions), self.seen)


async def _chat(url: str, seen: list[tuple[bool, int]], texts: list[str]) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    async with connect(url, extensions=[_RecordingFactory(seen)], compression=None) as ws:
        for n, text in enumerate(texts):
            await ws.send(chat_request(f"r{n}", [user(text, f"u{n}")]))
            frames += await recv_until(ws, lambda f, rid=f"r{n}": f.get("type") == "cf_agent_use_chat_response"
                                       and f.get("id") == rid and bool(f.get("done")))
    return frames


@pytest.mark.parametrize("protocol", [WebSocketProtocol, "websockets-sansio"])
async def test_short_frames_go_uncompressed_and_a_long_transcript_compressed(tmp_path: Path, protocol: Any) -> None:
    app = create_app([Talker], runtime=EmbeddedRuntime(tmp_path, idle_timeout=None))
    seen: list[tuple[bool, int]] = []
    with serve_in_thread(app, ws=protocol) as server:
        frames = await _chat(server.agent_url("talker", "room"), seen, ["hello", "a long one please"])
    transcript = [f for f in frames if f.get("type") == "cf_agent_chat_messages"][-1]
    assert transcript["messages"][-1]["parts"][-1]["text"] == LONG_ANSWER  # decoded whole, as sent
    short = [compressed for compressed, size in seen if size < COMPRESS_MIN_BYTES]
    long = [compressed for compressed, size in seen if size >= COMPRESS_MIN_BYTES]
    assert len(short) > 10 and long  # the chunks of two turns, and the long transcript
    assert all(long)
    if protocol is WebSocketProtocol:
        assert not any(short)
    else:  # uvicorn's own protocol compresses everything: what think serve no longer does
        assert all(short)


def _pair() -> tuple[PerMessageDeflate, PerMessageDeflate]:
    server = PerMessageDeflate(False, False, 12, 12, {"memLevel": 5})
    client = PerMessageDeflate(False, False, 12, 12)
    return server, client


def test_skipping_short_messages_keeps_the_compression_context_whole() -> None:
    server, client = _pair()
    sized = _SizedExtension(server, COMPRESS_MIN_BYTES)
    messages = [b"x" * 10, b"long and repeated " * 200, b"{}", b"long and repeated " * 300, b"tiny"]
    for data in messages:  # with context takeover: a skipped message must not disturb the next compressed one
        sent = sized.encode(Frame(Opcode.TEXT, data))
        assert sent.rsv1 == (len(data) >= COMPRESS_MIN_BYTES)
        assert client.decode(sent).data == data
    # A fragmented message is compressed throughout, whatever the size of its first frame.
    first = sized.encode(Frame(Opcode.TEXT, b"ab", fin=False))
    rest = sized.encode(Frame(Opcode.CONT, b"cd" * 2000, fin=True))
    assert first.rsv1 and not rest.rsv1
    assert client.decode(first).data + client.decode(rest).data == b"ab" + b"cd" * 2000
    ping = sized.encode(Frame(Opcode.PING, b"p"))
    assert ping.data == b"p" and not ping.rsv1


async def test_think_serve_speaks_it(tmp_path: Path) -> None:
    seen: list[tuple[bool, int]] = []
    with logged_serve(["tests.cli.ops_agents:Plain"], {"THINK_DATA_DIR": str(tmp_path / "d")}, tmp_path / "serve.log",
                      ready_path="/agents/plain/probe/get-messages") as server:
        frames = await _chat(f"{server.ws}/agents/plain/compression", seen, ["hello"])
    assert frames[-1].get("done") is True
    assert seen and not any(compressed for compressed, size in seen if size < COMPRESS_MIN_BYTES)
