"""The stream-stall watchdog: a stalled turn keeps its partial and is continued by recovery."""

from __future__ import annotations

import warnings
from pathlib import Path

from tests.recovery.agents import Recoverable, reset, texts
from think import TurnConfig, TurnContext, open_agent
from think.recovery import ChatRecoveryPolicy
from think.stream.fanout import Recovering, TurnEvent
from think.testing.models import HANG, ScriptedModel, delay, text


class Watched(Recoverable):
    chat_stream_stall_timeout = 0.2


async def test_a_stalled_stream_is_persisted_and_continued(data_dir: Path) -> None:
    reset(Watched, ScriptedModel([[text("Hel"), HANG], "lo!"]))
    async with open_agent(Watched, "w", data_dir=data_dir) as agent:
        events: list[Recovering] = []

        async def listen(event: TurnEvent) -> None:
            if isinstance(event, Recovering):
                events.append(event)

        agent.fanout.subscribe(listen)
        result = await agent.save_messages(["Hi"])
        assert result.status == "aborted" and result.error is None  # closed cleanly, not failed
        assert await agent.wait_until_stable(timeout=5)
        transcript = texts(agent.messages)
        assert "".join(t for _, t in transcript[1:]) == "Hello!"
        assert [o.action for o in agent.recovery.outcomes] == ["continue"]
        assert [e.recovering for e in events] == [True, False]
        assert agent.recovery.store.all() == [] and agent.streams.terminal is None


async def test_a_slow_but_steady_stream_is_not_a_stall(data_dir: Path) -> None:
    reset(Watched, ScriptedModel([[text("a"), delay(0.1), text("b"), delay(0.1), text("c"), delay(0.1),
                                   text("d")]]))
    async with open_agent(Watched, "w", data_dir=data_dir) as agent:
        result = await agent.save_messages(["Hi"])
        assert result.status == "completed"
        assert agent.recovery.outcomes == []


class Exhausting(Watched):
    chat_recovery = ChatRecoveryPolicy(backoff=0.0, max_attempts=1)


async def test_stalls_exhaust_through_the_same_budget(data_dir: Path) -> None:
    reset(Exhausting, ScriptedModel([[text("Hel"), HANG], [HANG]]))
    async with open_agent(Exhausting, "x", data_dir=data_dir) as agent:
        await agent.save_messages(["Hi"])
        assert await agent.wait_until_stable(timeout=5)
        assert [c.reason for c in Exhausting.exhausted] == ["max_attempts_exceeded"]
        assert agent.streams.terminal is not None
        assert agent.streams.terminal.body == agent.chat_recovery.terminal_message
        assert agent.recovery.store.all() == []


class PerTurn(Recoverable):
    """No watchdog by default; a turn whose body asks for one gets it through `before_turn`."""

    async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
        if ctx.body and "stall_ms" in ctx.body:
            return TurnConfig(stream_stall_timeout=ctx.body["stall_ms"] / 1000)
        return None


async def test_a_turn_can_set_its_own_stall_timeout(data_dir: Path) -> None:
    reset(PerTurn, ScriptedModel([[text("Hel"), HANG], "lo!"]))
    async with open_agent(PerTurn, "p", data_dir=data_dir) as agent:
        result = await agent.save_messages(["Hi"], body={"stall_ms": 200})
        assert result.status == "aborted"
        assert await agent.wait_until_stable(timeout=5)
        assert "".join(t for _, t in texts(agent.messages)[1:]) == "Hello!"
        assert [o.action for o in agent.recovery.outcomes] == ["continue"]


async def test_a_turn_can_switch_the_agents_watchdog_off(data_dir: Path) -> None:
    class Off(Watched):
        async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
            return TurnConfig(stream_stall_timeout=0)

    reset(Off, ScriptedModel([[text("a"), delay(0.4), text("b")]]))
    async with open_agent(Off, "o", data_dir=data_dir) as agent:
        result = await agent.save_messages(["Hi"])
        assert result.status == "completed"  # 0.4 s without a chunk, but this turn has no watchdog
        assert agent.recovery.outcomes == []


async def test_the_old_millisecond_settings_still_work_with_a_deprecation_warning(data_dir: Path) -> None:
    import pytest

    with pytest.warns(DeprecationWarning, match="stream_stall_timeout"):
        assert TurnConfig(stream_stall_timeout_ms=200).stream_stall_timeout == 0.2

    class OldStyle(Recoverable):
        chat_stream_stall_timeout_ms = 200

    reset(OldStyle, ScriptedModel([[text("Hel"), HANG], "lo!"]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with open_agent(OldStyle, "old", data_dir=data_dir) as agent:
            assert agent.chat_stream_stall_timeout == 0.2
            assert (await agent.save_messages(["Hi"])).status == "aborted"  # the 200 ms watchdog fired
            assert await agent.wait_until_stable(timeout=5)
            assert "".join(t for _, t in texts(agent.messages)[1:]) == "Hello!"
    assert any(issubclass(w.category, DeprecationWarning) and "chat_stream_stall_timeout_ms" in str(w.message)
               for w in caught)
