"""A chat request streams its reply chunk by chunk, then the saved transcript, then `done`."""

from __future__ import annotations

import orjson

from tests.chat.conftest import Connect
from tests.chat.helpers import after
from think.protocol.frames import ChatMessages, ChatResponse, ServerFrame


async def test_the_reply_streams_and_ends_with_the_transcript_then_done(connect: Connect) -> None:
    frames: list[ServerFrame] = []
    async with connect("stream", on_frame=frames.append) as client:
        start = len(frames)
        turn = await client.send_chat("hello streaming world", request_id="cEdJzcNh")
        await turn
        assert after(frames, start) == [
            ("start", 0), ("start-step", 1), ("text-start", 2), ("text-delta", 3), ("text-delta", 4),
            ("text-delta", 5), ("text-delta", 6), ("text-end", 7), ("finish-step", 8), ("finish", 9),
            ("messages", 2),
            ("done", "completed", False),
        ]
        user, reply = client.messages
        done = frames[-1]
        assert isinstance(done, ChatResponse)
        assert done.message_ids == (user.id,) and done.body == "" and turn.outcome == "completed"

    # What is saved is not what was streamed: the user message is stamped, parts gain states.
    assert user.to_json() == {"id": user.id, "role": "user", "metadata": {"channel": "web"},
                              "parts": [{"type": "text", "text": "hello streaming world"}]}
    assert reply.to_json()["parts"] == [{"type": "step-start"},
                                        {"type": "text", "text": "Echo: hello streaming world", "state": "done"}]
    first = frames[start]
    assert isinstance(first, ChatResponse)
    assert orjson.loads(first.body) == {"type": "start", "messageId": reply.id}  # client and server agree
    assert turn.message == reply  # the client's fold of the chunks is what the server saved
    assert isinstance(frames[-2], ChatMessages)
