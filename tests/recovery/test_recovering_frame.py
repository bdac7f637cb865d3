"""Connected clients see `cf_agent_chat_recovering` while a stalled turn is recovered."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.chat.live_server import serve_in_thread
from tests.recovery.agents import reset, texts
from tests.recovery.test_stall_watchdog import Watched
from think.client import AgentClient
from think.protocol.frames import ChatRecovering
from think.recovery import ChatRecoveryPolicy
from think.runtime.embedded import EmbeddedRuntime
from think.server import create_app
from think.testing.models import HANG, ScriptedModel, text


async def test_clients_see_the_recovering_flag_and_the_recovered_reply(tmp_path: Path) -> None:
    reset(Watched, ScriptedModel([[text("Hel"), HANG], "lo!"]))
    flags: list[tuple[bool, str | None]] = []

    def on_frame(frame: object) -> None:
        if isinstance(frame, ChatRecovering):
            flags.append((frame.recovering, frame.id))

    app = create_app([Watched], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        async with AgentClient.connect(live.agent_url("watched", "room"), on_frame=on_frame) as client:
            turn = await client.send_chat("Hi")
            with anyio.fail_after(10):
                await client.wait_until(lambda c: len(flags) >= 2 and len(c.messages) >= 2
                                        and "".join(t for _, t in texts(c.messages)[1:]) == "Hello!")
            assert [f for f, _ in flags] == [True, False]
            assert {i for _, i in flags} == {turn.request_id}
            assert texts(client.messages) == texts(await client.get_messages())


class SlowToRecover(Watched):
    chat_recovery = ChatRecoveryPolicy(backoff=1.0)


async def test_a_client_that_connects_during_a_recovery_is_told_on_connect(tmp_path: Path) -> None:
    reset(SlowToRecover, ScriptedModel([[text("Hel"), HANG], "lo!"]))
    first: list[bool] = []
    late: list[tuple[bool, str | None]] = []

    def on_first(frame: object) -> None:
        if isinstance(frame, ChatRecovering):
            first.append(frame.recovering)

    def on_late(frame: object) -> None:
        if isinstance(frame, ChatRecovering):
            late.append((frame.recovering, frame.id))

    app = create_app([SlowToRecover], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        url = live.agent_url("slow-to-recover", "room")
        async with AgentClient.connect(url, on_frame=on_first) as client:
            turn = await client.send_chat("Hi")
            with anyio.fail_after(10):
                await client.wait_until(lambda c: first == [True])  # the recovery waits out its backoff
            async with AgentClient.connect(url, on_frame=on_late) as tab:
                with anyio.fail_after(10):
                    await tab.wait_until(lambda c: len(late) >= 2)
                assert late == [(True, turn.request_id), (False, turn.request_id)]
                assert "".join(t for _, t in texts(await tab.get_messages())[1:]) == "Hello!"


async def test_no_recovering_frame_on_connect_when_nothing_is_recovered(tmp_path: Path) -> None:
    reset(SlowToRecover, ScriptedModel(["Hello!"]))
    frames: list[object] = []
    app = create_app([SlowToRecover], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        url = live.agent_url("slow-to-recover", "room")
        async with AgentClient.connect(url) as client:
            await (await client.send_chat("Hi")).wait()
        async with AgentClient.connect(url, on_frame=frames.append) as tab:
            await tab.get_messages()
    assert not any(isinstance(f, ChatRecovering) for f in frames)
