"""Twenty turns in a row on one socket: each streams from seq 0 and the history grows by two."""

from __future__ import annotations

from tests.chat.conftest import Connect


async def test_twenty_turns_in_a_row(connect: Connect) -> None:
    async with connect("twenty") as client:
        for i in range(20):
            turn = await (await client.send_chat(f"message {i}"))
            assert turn.outcome == "completed" and turn.text == f"Echo: message {i}"
            assert turn.chunks[0]["type"] == "start" and client.message_count == 2 * (i + 1)
        history = await client.get_messages()
    assert [m.text for m in history[-2:]] == ["message 19", "Echo: message 19"]
    assert len({m.id for m in history}) == 40
