"""Agent state reaches every tab: sent on connect, and a change from one tab goes to the others."""

from __future__ import annotations

from tests.chat.conftest import Connect
from think.protocol.frames import ServerFrame, State, StreamResumeNone, StreamResumeRequest


async def test_state_from_one_tab_reaches_the_others(connect: Connect) -> None:
    frames_a: list[ServerFrame] = []
    async with connect("st", agent="stateful-chat", on_frame=frames_a.append) as a, \
            connect("st", agent="stateful-chat") as b:
        assert a.state == b.state == {"count": 0}
        mark = len(frames_a)
        await a.set_state({"count": 1, "by": "a"})
        await b.wait_until(lambda c: c.state == {"count": 1, "by": "a"})
        # The sender is not echoed: the next frame it gets answers its probe.
        await a.send(StreamResumeRequest("after-state"))
        await a.wait_until(lambda c: len(frames_a) > mark)
        assert frames_a[mark:] == [StreamResumeNone("idle", "after-state")]

    async with connect("st", agent="stateful-chat") as later:
        assert later.state == {"count": 1, "by": "a"}


async def test_an_agent_without_state_sends_none_until_it_has_one(connect: Connect) -> None:
    frames: list[ServerFrame] = []
    async with connect("no-state", on_frame=frames.append) as a, connect("no-state") as b:
        assert not any(isinstance(f, State) for f in frames)
        await b.set_state([1, 2, 3])
        await a.wait_until(lambda c: c.state == [1, 2, 3])
