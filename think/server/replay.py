"""The frames that replay a stream to one connection that ACKed it (`cf_agent_stream_resume_ack`).

The resumable buffer holds the stream's chunks (`think.stream.resumable`). Replayed as they are,
they rebuild the reply of a first turn. Two kinds of stream need more, so that the stock client
ends with the one message the server stores:

* a recovery continuation streams into the stored partial reply (`TurnRequest.extend`): the
  client gets that message as chunks under a `start` naming it, then what the stream added;
* an ordinary continuation's stream continues the previous message live; replayed after its
  reply was saved as a message of its own, its `start` names that message.

A stream a restart interrupted is closed by `orphan_done`: outcome `aborted` and the user
message it answered (its recovery, if any, comes as a turn of its own).
"""

from __future__ import annotations

import orjson

from think.agent import Think
from think.protocol.frames import ChatResponse
from think.protocol.payloads import chunk_body
from think.server.connection import Connection
from think.stream.rebuild import message_chunks


def base_first(agent: Think) -> bool:
    """Whether a connecting client gets the stored transcript before the active stream: when
    that stream is an interrupted continuation (its chunks were saved as a message the client
    may not have, or folded into the one it extended). A first turn's replay, and a live
    recovery continuation's (which starts with the whole message), rebuild their message from
    the `start` chunk on and need no transcript."""
    streams = agent.streams
    return streams.live is None and streams.orphan is not None and streams.orphan.continuation


def send_replay(connection: Connection, agent: Think, request_id: str) -> None:
    """Send `connection` the buffered chunks of stream `request_id`, rebuilt as described above."""
    streams = agent.streams
    chunks = streams.chunks(request_id)
    live = streams.live
    extended: str | None = None
    if live is not None and live.request_id == request_id and live.extends:
        extended = live.message_id  # a recovery continuation streams into this stored message
    elif request_id in streams.extending and (info := streams.get(request_id)) is not None:
        extended = info.message_id  # cut off while it did: the message holds its chunks now
        chunks = chunks[:1]
    stored = agent.session.get(extended) if extended is not None else None
    if stored is not None and chunks:
        start, *rest = message_chunks(stored)
        connection.send_frame(ChatResponse(id=request_id, body=chunk_body(start), seq=chunks[0][0], replay=True))
        for chunk in rest:
            connection.send_frame(ChatResponse(id=request_id, body=chunk_body(chunk), replay=True))
        for seq, body in chunks[1:]:
            connection.send_frame(ChatResponse(id=request_id, body=body, seq=seq, replay=True))
        return
    if chunks and not (live is not None and live.request_id == request_id):
        info = streams.get(request_id)
        if info is not None and info.continuation and info.message_id:
            chunks[0] = (chunks[0][0], _with_message_id(chunks[0][1], info.message_id))
    for seq, body in chunks:
        connection.send_frame(ChatResponse(id=request_id, body=body, seq=seq, replay=True))


def orphan_done(agent: Think, request_id: str) -> ChatResponse:
    """The frame that closes the replay of a stream a restart interrupted: outcome `aborted` and
    the user message it answered (none for a continuation, which answered no new message)."""
    info = agent.streams.get(request_id)
    continuation = info is not None and info.continuation
    user_ids: tuple[str, ...] = ()
    history = agent.session.history()
    at = agent.session.index_of(info.message_id) if info is not None and info.message_id else None
    for message in reversed(history[:at] if at is not None else history):
        if message.role == "user":
            user_ids = (message.id,)
            break
    return ChatResponse(id=request_id, done=True, replay=True, outcome="aborted", continuation=continuation,
                        message_ids=None if continuation else user_ids)


def _with_message_id(body: str, message_id: str) -> str:
    """A `start` chunk's body with `messageId` set, when it has none."""
    try:
        chunk = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    if not isinstance(chunk, dict) or chunk.get("type") != "start" or chunk.get("messageId"):
        return body
    chunk["messageId"] = message_id
    return orjson.dumps(chunk).decode()
