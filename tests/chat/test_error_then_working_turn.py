"""A model failure is reported, the partial reply is kept, and the next turn works."""

from __future__ import annotations

from tests.chat.conftest import Connect
from tests.chat.helpers import after
from think.protocol.frames import ChatResponse, ServerFrame


async def test_a_failed_turn_then_a_working_one(connect: Connect) -> None:
    frames: list[ServerFrame] = []
    async with connect("errors", on_frame=frames.append) as client:
        mark = len(frames)
        failed = await (await client.send_chat("boom now"))
        assert after(frames, mark) == [
            ("start", 0), ("start-step", 1), ("text-start", 2), ("text-delta", 3), ("text-delta", 4),
            ("text-delta", 5), ("text-end", 6),
            ("error", "mock model exploded"),
            ("messages", 2),
            ("done", "error", False),
        ]
        error_frame, done = frames[-3], frames[-1]
        assert isinstance(error_frame, ChatResponse) and isinstance(done, ChatResponse)
        user_id = client.messages[0].id
        assert error_frame.message_ids == (user_id,) and not error_frame.done
        assert done.message_ids == (user_id,)
        assert failed.outcome == "error" and failed.error == "mock model exploded"
        assert client.messages[-1].text == "About to fail. "  # the partial is kept

        ok = await (await client.send_chat("after error"))
        assert ok.outcome == "completed" and ok.text == "Echo: after error"
        assert [m.text for m in await client.get_messages()] == [
            "boom now", "About to fail. ", "after error", "Echo: after error"]


async def test_a_turn_that_fails_before_streaming_ends_with_one_error_frame(connect: Connect) -> None:
    frames: list[ServerFrame] = []
    async with connect("early-error", on_frame=frames.append) as client:
        mark = len(frames)
        failed = await (await client.send_chat("no model here", request_id="early1"))
        assert frames[mark:] == [ChatResponse(id="early1", body="No model is configured", done=True, error=True)]
        assert (failed.outcome, failed.error) == ("error", "No model is configured")
        assert [m.text for m in await client.get_messages()] == ["no model here"]  # what the user said is kept
        assert (await (await client.send_chat("and now?"))).text == "Echo: and now?"
