"""Regenerating replaces the last answer: history and reloads show only the new one."""

from __future__ import annotations

from tests.chat.conftest import Connect


async def test_regenerate_shows_one_answer(connect: Connect) -> None:
    async with connect("regen") as client:
        first = await (await client.send_chat("regen me"))
        old_id = client.messages[-1].id
        again = await (await client.regenerate())
        assert again.outcome == "completed" and again.message_ids == first.message_ids
        user, reply = client.messages
        assert user.text == "regen me" and reply.text == "Echo: regen me" and reply.id != old_id
        assert again.message.id == reply.id

    async with connect("regen") as reloaded:
        assert [m.id for m in reloaded.messages] == [user.id, reply.id]
        assert [m.id for m in await reloaded.get_messages()] == [user.id, reply.id]
        turn = await (await reloaded.send_chat("and then"))  # the conversation continues on the new branch
        assert turn.outcome == "completed"
        assert [m.id for m in reloaded.messages][:2] == [user.id, reply.id] and reloaded.message_count == 4
