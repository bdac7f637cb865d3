"""A turn a restart interrupted: its buffered chunks become the saved partial reply.

When an agent starts, a stream still marked as streaming lost its producer with the previous
process. Its chunks are folded into the assistant message they were building, which is saved
(the transcript and `get-messages` show the partial at once), and the stream stays on offer to
reconnecting clients (`ResumableStreams.orphan`): the first one that ACKs it gets the chunks
replayed and a closing `done` frame.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

import orjson

from think.messages import Message
from think.stream.fold import Fold
from think.turns.extend import closed
from think.turns.tool_results import settle_earlier_calls

if TYPE_CHECKING:
    from think.agent import Think

log = logging.getLogger("think.turns")


def rebuild(chunks: list[tuple[int, str]], *, message_id: str, continuation: bool,
            base: Message | None = None) -> tuple[Message, Fold]:
    """The assistant message a stream's chunks build (onto `base`, the stored message a recovery
    continuation extended, if any), and the fold (with outputs for earlier calls)."""
    fold = Fold(base if base is not None else Message(id=message_id, role="assistant"), continuation=continuation)
    for _, body in chunks:
        try:
            chunk = orjson.loads(body)
        except orjson.JSONDecodeError:
            continue
        if isinstance(chunk, dict):
            fold.apply(chunk)
    return fold.message, fold


async def recover_interrupted_streams(agent: Think) -> list[Message]:
    """Save the partial reply of every stream a restart interrupted; returns the saved messages."""
    saved: list[Message] = []
    for info in agent.streams.orphans():
        chunks = agent.streams.chunks(info.request_id)
        # A first turn's `start` chunk carries the reply's id; a continuation's reply gets a new
        # one, unless it was a recovery continuation: that one extends the message it named.
        base = _extended(agent, info.message_id) if info.continuation else None
        message, fold = rebuild(chunks, message_id=str(uuid.uuid4()), continuation=info.continuation, base=base)
        try:
            if fold.cross_message:
                await settle_earlier_calls(agent.session, fold.cross_message)
            if message.parts:
                saved.append(agent.session.save([message])[0])
                agent.streams.set_message_id(info.request_id, message.id)
        except Exception:
            log.exception("could not save the partial reply of interrupted turn %s", info.request_id)
    return saved


def _extended(agent: Think, message_id: str | None) -> Message | None:
    """The stored message an interrupted recovery continuation streamed into, closed (None when
    it is not the newest message any more: the chunks then make a message of their own)."""
    if message_id is None:
        return None
    history = agent.session.history()
    if not history or history[-1].id != message_id:
        return None
    return closed(history[-1])[0]
