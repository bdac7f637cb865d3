"""`WebSocketProtocol`: uvicorn's WebSocket protocol, compressing only the frames worth it.

With permessage-deflate negotiated (every browser and the npm clients ask for it), uvicorn's
`websockets-sansio` protocol compresses every message the server sends. A turn sends a frame per
chunk of its stream, most of them a hundred bytes or so (a text delta, a step boundary), where
compression saves a few dozen bytes and costs CPU at both ends: ~5 µs a frame on the server (3.5
times what building the frame costs), and more on the client (the npm `ws` package inflates
each message on Node's thread pool; a turn of 21 frames cost the npm client 2.5–3 ms more CPU
compressed, `bench/ws_turns.py --compress-all`). RFC 7692 lets an endpoint send any message
uncompressed (RSV1 unset; the peer's decoder only sees compressed ones), so here a single-frame
message shorter than `COMPRESS_MIN_BYTES` goes out as it is, and longer ones (a transcript, a
large tool output) are compressed as before, with the negotiated window and context. What
clients send is decoded as before. `think serve` uses it; pass `ws=WebSocketProtocol` to
`uvicorn.Config` or `uvicorn.run` to get it when serving `create_app` yourself.

Nothing here trusts the client more or less: negotiation, limits and decoding are uvicorn's and
websockets'. If a later uvicorn builds its connection differently, the protocol is left as
uvicorn made it (everything compressed), never broken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.extensions.base import Extension, ServerExtensionFactory
from websockets.frames import Frame, Opcode
from websockets.typing import ExtensionName, ExtensionParameter

COMPRESS_MIN_BYTES = 1024
"""Messages shorter than this are sent uncompressed (the threshold the npm `ws` package uses)."""

_DATA = (Opcode.TEXT, Opcode.BINARY)


class _SizedExtension(Extension):
    """A negotiated permessage-deflate that leaves short single-frame messages uncompressed."""

    def __init__(self, inner: Extension, min_bytes: int) -> None:
        self.inner = inner
        self.name = inner.name
        self.min_bytes = min_bytes

    def decode(self, frame: Frame, *, max_size: int | None = None) -> Frame:
        return self.inner.decode(frame, max_size=max_size)

    def encode(self, frame: Frame) -> Frame:
        # Only a whole message is sent as it is: a fragmented one (not fin, or its continuation
        # frames) is compressed throughout, as its first frame decided.
        if frame.fin and frame.opcode in _DATA and len(frame.data) < self.min_bytes:
            return frame
        return self.inner.encode(frame)

    def __repr__(self) -> str:
        return f"_SizedExtension({self.inner!r}, min_bytes={self.min_bytes})"


class _SizedFactory(ServerExtensionFactory):
    """Negotiates as `inner` does; the extension it agrees on skips short messages."""

    def __init__(self, inner: ServerExtensionFactory, min_bytes: int) -> None:
        self.inner = inner
        self.name: ExtensionName = inner.name
        self.min_bytes = min_bytes

    def process_request_params(self, params: Sequence[ExtensionParameter],
                               accepted_extensions: Sequence[Extension]) -> tuple[list[ExtensionParameter], Extension]:
        response, extension = self.inner.process_request_params(params, accepted_extensions)
        return response, _SizedExtension(extension, self.min_bytes)


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's `websockets-sansio` protocol, sending messages under `COMPRESS_MIN_BYTES`
    uncompressed (see the module docstring)."""

    min_bytes = COMPRESS_MIN_BYTES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        factories = getattr(getattr(self, "conn", None), "available_extensions", None)
        if isinstance(factories, list) and all(isinstance(f, ServerExtensionFactory) for f in factories):
            self.conn.available_extensions = [
                _SizedFactory(f, self.min_bytes) if f.name == "permessage-deflate" else f for f in factories]


__all__ = ["COMPRESS_MIN_BYTES", "WebSocketProtocol"]
