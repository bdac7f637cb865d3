"""Server-sent events: a small parser over lines of text.

It follows the parts of the SSE format that model APIs use: `data:` lines (joined with newlines
when an event has several), `event:` lines, comment lines starting with `:`, and a blank line
that dispatches the event. `data: [DONE]`, OpenAI's end-of-stream marker, ends the iteration.
`id:` and `retry:` fields are ignored: a model stream is never resumed by id.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass

import httpx

DONE = "[DONE]"


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    data: str
    event: str = "message"
    """The `event:` field; `"message"` when the event had none, as the SSE spec says."""


async def iter_sse(lines: AsyncIterable[str]) -> AsyncGenerator[ServerSentEvent, None]:
    """Yield the events in `lines` (text lines without their line endings).

    Stops after `data: [DONE]` without yielding it. An event still open when the lines run out is
    yielded too, so a server that omits the final blank line loses nothing.
    """
    data: list[str] = []
    event = "message"
    async for line in lines:
        if not line:
            if data:
                text = data[0] if len(data) == 1 else "\n".join(data)
                if text == DONE:
                    return
                yield ServerSentEvent(text, event)
                data = []
            event = "message"
        elif line.startswith("data:"):
            data.append(line[6:] if line.startswith("data: ") else line[5:])
        elif line.startswith("event:"):
            event = line[7:] if line.startswith("event: ") else line[6:]
        # Anything else is a comment (":…"), an `id:`/`retry:` field, or noise: ignored.
    if data:
        text = "\n".join(data)
        if text != DONE:
            yield ServerSentEvent(text, event)


def aiter_sse(response: httpx.Response) -> AsyncGenerator[ServerSentEvent, None]:
    """The events of a streaming httpx response."""
    return iter_sse(response.aiter_lines())
