"""Every tab on an agent sees every turn: the user message first, then the stream, then `done`."""

from __future__ import annotations

from tests.chat.conftest import Connect
from tests.chat.helpers import after
from think.protocol.frames import ServerFrame


async def test_a_second_tab_sees_the_user_message_the_stream_and_the_end(connect: Connect) -> None:
    frames_a: list[ServerFrame] = []
    frames_b: list[ServerFrame] = []
    async with connect("tabs", on_frame=frames_a.append) as a, connect("tabs", on_frame=frames_b.append) as b:
        mark_a, mark_b = len(frames_a), len(frames_b)
        turn = await (await a.send_chat("broadcast this"))
        seen = b.turn(turn.request_id)
        await seen
        stream = [("start", 0), ("start-step", 1), ("text-start", 2), ("text-delta", 3), ("text-delta", 4),
                  ("text-delta", 5), ("text-end", 6), ("finish-step", 7), ("finish", 8), ("messages", 2),
                  ("done", "completed", False)]
        assert after(frames_a, mark_a) == stream  # the sender is not sent its own message back
        assert after(frames_b, mark_b) == [("messages", 1), *stream]
        assert seen.message == turn.message and seen.message_ids == turn.message_ids
        assert [m.to_json() for m in b.messages] == [m.to_json() for m in a.messages]

        # And the other way round.
        reply = await (await b.send_chat("reply from B"))
        await a.turn(reply.request_id)
        assert [m.text for m in a.messages] == ["broadcast this", "Echo: broadcast this", "reply from B",
                                                "Echo: reply from B"]
