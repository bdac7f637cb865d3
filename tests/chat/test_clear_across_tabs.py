"""Clearing in one tab empties the conversation everywhere; the other tabs are told to reset."""

from __future__ import annotations

from tests.chat.conftest import Connect
from tests.chat.helpers import after
from think.protocol.frames import ChatClear, ServerFrame, StreamResumeNone, StreamResumeRequest


async def test_clear_in_one_tab_resets_the_other(connect: Connect) -> None:
    frames_a: list[ServerFrame] = []
    frames_b: list[ServerFrame] = []
    async with connect("clear", on_frame=frames_a.append) as a, connect("clear", on_frame=frames_b.append) as b:
        await (await a.send_chat("to be cleared"))
        await b.wait_until(lambda c: c.message_count == 2)
        mark_a = len(frames_a)
        await a.clear()
        await b.wait_until(lambda c: any(isinstance(f, ChatClear) for f in frames_b))
        assert b.messages == [] and a.messages == []

        # The sender gets nothing back: the next frame it sees answers its next probe.
        await a.send(StreamResumeRequest("after-clear"))
        await a.wait_until(lambda c: len(frames_a) > mark_a)
        assert frames_a[mark_a:] == [StreamResumeNone("idle", "after-clear")]

        assert await a.get_messages() == []
        turn = await (await b.send_chat("after clear"))
        assert turn.outcome == "completed"
        await a.wait_until(lambda c: c.message_count == 2)

    async with connect("clear") as fresh:
        assert [m.text for m in fresh.messages] == ["after clear", "Echo: after clear"]
    assert after(frames_b, 0).count("ChatClear") == 1
