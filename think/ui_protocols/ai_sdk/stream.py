"""`ChatStream`: one HTTP response as a listener on the chat channel, and its SSE encoding.

An AI SDK request is served by the same `ChatChannel` a WebSocket tab talks to: the request
becomes the channel's own frames (`cf_agent_use_chat_request`, the resume probe and ACK, tool
results and approvals), and the response is a `Connection` of that channel whose frames are
re-encoded instead of written to a socket. So the turn, its persistence, its hooks and its
resumable buffer are the ones every other client sees.

Of the frames the channel sends, a `ChatStream` keeps those about the stream it follows (its
request id) and the resume handshake's answers; each chunk body is already a UI message chunk
(`data: <body>`). A chunk whose `seq` was sent before is dropped (no duplicate after a replay),
an error becomes an `error` chunk, and the end of the stream is `data: [DONE]`.

A resumed client rebuilds the reply from the replay's first `start` (the `ai` package resets the
message there). A continuation's stream only adds to the stored message it continues, so when
the stream followed is one (`rebase`), its `start` is replaced by that message's own chunks
(`think.stream.rebuild`): the client ends with the whole message, once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import orjson

from think.messages import Message
from think.server.connection import Connection, new_connection_id
from think.stream.rebuild import message_chunks

MAX_BUFFERED = 10_000
"""Frames waiting for one slow HTTP client before its response is ended."""

HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The headers of the `ai` package's `createUIMessageStreamResponse` (`UI_MESSAGE_STREAM_HEADERS`)."""

DONE = b"data: [DONE]\n\n"
KEEP_ALIVE = b": keep-alive\n\n"
"""An SSE comment (the `ai` package's own), sent when nothing else was for `KEEP_ALIVE_SECONDS`,
so that proxies do not close a stream whose turn is busy in a long tool call."""
KEEP_ALIVE_SECONDS = 15.0
_RESPONSE = "cf_agent_use_chat_response"
_KEPT = frozenset({"cf_agent_stream_resuming", "cf_agent_stream_resume_none", "cf_agent_stream_pending",
                   "cf_agent_protocol_error"})
"""Frames kept besides the followed stream's: the resume handshake's answers and refusals."""
_MARKERS = ('"cf_agent_use_chat_response"', '"cf_agent_stream_', '"cf_agent_protocol_error"')


@dataclass(frozen=True, slots=True)
class Frame:
    """A frame the channel sent this stream, decoded."""

    type: str
    data: dict[str, Any]


class _NoSocket:
    async def send_text(self, data: str) -> None:  # pragma: no cover - a ChatStream has no writer
        raise RuntimeError("a ChatStream is read with frames(), not written to a socket")

    async def close(self, code: int = 1000, reason: str | None = None) -> None:  # pragma: no cover
        return None


class ChatStream(Connection):
    """A connection of the chat channel that an HTTP response reads (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(_NoSocket(), "http-" + new_connection_id())
        self.request_id: str | None = None
        """The stream this response follows (set by the caller, or by a `resuming` answer)."""
        self._frames: deque[Frame] = deque()
        self._ready = anyio.Event()
        self._ended = False
        self._last_seq = -1
        self.released = False
        """Set once the response has given up its place on the channel."""
        self.prefix = b""
        """Chunks to send before the stream's own (what the request changed that it does not say)."""
        self.rebase: Message | None = None
        """The stored message the followed stream continues (its `start` becomes that message)."""

    def send(self, text: str) -> None:
        """Called by the channel (never blocks): keep what this response needs."""
        if self._ended or not any(marker in text for marker in _MARKERS):
            return  # transcripts, state, MCP and the like: not decoded at all
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:
            return
        kind = data.get("type") if isinstance(data, dict) else None
        if kind == _RESPONSE:
            if data.get("id") != self.request_id:
                return
        elif kind not in _KEPT:
            return
        if len(self._frames) >= MAX_BUFFERED:
            self._frames.clear()
            self._frames.append(Frame(_RESPONSE, {"id": self.request_id, "done": True, "error": True,
                                                  "body": "The client fell too far behind; resume the stream"}))
            self._ended = True
        else:
            self._frames.append(Frame(str(kind), data))
        self._ready.set()

    def take(self) -> list[Frame]:
        """The frames received so far (without waiting)."""
        out = list(self._frames)
        self._frames.clear()
        return out

    async def next(self) -> Frame:
        """The next frame, waiting for it."""
        while not self._frames:
            self._ready = anyio.Event()
            await self._ready.wait()
        return self._frames.popleft()

    def end(self) -> None:
        self._ended = True
        self._frames.clear()

    def encode(self, frame: Frame) -> tuple[bytes, bool]:
        """The SSE bytes of one response frame, and whether the stream is over."""
        data = frame.data
        out = b""
        body = data.get("body")
        seq = data.get("seq")
        fresh = not isinstance(seq, int) or seq > self._last_seq
        if isinstance(seq, int):
            self._last_seq = max(self._last_seq, seq)
        if data.get("error"):
            text = body if isinstance(body, str) and body else "The turn failed"
            out = sse({"type": "error", "errorText": text})
        elif isinstance(body, str) and body and fresh:
            out = self._rebased(body) or b"data: " + body.encode() + b"\n\n"
        if data.get("done"):
            if data.get("replay") and data.get("outcome") == "aborted":
                out += sse({"type": "abort", "reason": "The server stopped while this reply streamed"})
            return out + DONE, True
        return out, False

    def _rebased(self, body: str) -> bytes | None:
        if self.rebase is None or '"start"' not in body:
            return None
        try:
            chunk = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(chunk, dict) or chunk.get("type") != "start":
            return None
        base, self.rebase = self.rebase, None
        return b"".join(sse(c) for c in message_chunks(base))

    async def events(self, first: list[Frame] | None = None) -> AsyncIterator[bytes]:
        """The SSE body: `prefix`, `first` (frames already taken), then the live frames, to `[DONE]`."""
        if self.prefix:
            yield self.prefix
        for frame in first or ():
            chunk, over = self.encode(frame)
            if chunk:
                yield chunk
            if over:
                return
        while True:
            waited: Frame | None = None
            with anyio.move_on_after(KEEP_ALIVE_SECONDS):
                waited = await self.next()
            if waited is None:
                yield KEEP_ALIVE
                continue
            if waited.type != _RESPONSE:
                continue
            chunk, over = self.encode(waited)
            if chunk:
                yield chunk
            if over:
                return


def sse(chunk: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(chunk) + b"\n\n"
