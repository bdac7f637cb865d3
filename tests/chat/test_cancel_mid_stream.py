"""Stop keeps the partial reply: it is saved (text still "streaming") and the turn is `aborted`."""

from __future__ import annotations

from tests.chat.conftest import Connect
from tests.chat.helpers import after
from think.protocol.frames import ChatRequestCancel, ServerFrame


async def test_cancel_mid_stream_keeps_the_partial_reply(connect: Connect) -> None:
    frames: list[ServerFrame] = []
    async with connect("cancel", on_frame=frames.append) as client:
        turn = await client.send_chat("slow cancel me")
        await client.wait_until(lambda c: turn.text == "w01 w02 w03 ")
        mark = len(frames)
        await client.cancel(turn.request_id)
        await turn
        assert turn.outcome == "aborted" and turn.error is None
        assert after(frames, mark) == [("messages", 2), ("done", "aborted", False)]
        partial = client.messages[-1].to_json()
        assert partial["parts"] == [{"type": "step-start"},
                                    {"type": "text", "text": "w01 w02 w03 ", "state": "streaming"}]
        assert [m.to_json() for m in await client.get_messages()][-1] == partial

        # The conversation goes on after a cancel.
        assert (await (await client.send_chat("after cancel"))).text == "Echo: after cancel"


async def test_cancelling_an_unknown_request_does_nothing(connect: Connect) -> None:
    frames: list[ServerFrame] = []
    async with connect("cancel-unknown", on_frame=frames.append) as client:
        await client.send(ChatRequestCancel("no-such-request"))
        mark = len(frames)
        turn = await (await client.send_chat("still here"))
        assert turn.outcome == "completed" and not client.errors
        assert after(frames, mark)[0] == ("start", 0)  # no answer to the cancel came before
