"""Durable schedules on agents: fire on time, survive restarts, no backfill of recurring runs."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from think import Agent, ConfigurationError, EmbeddedRuntime

FIRED: list[tuple[str, Any]] = []


class Reminder(Agent):
    async def remind(self, payload: Any) -> None:
        FIRED.append((self.name, payload))

    def tick(self, payload: Any) -> None:
        FIRED.append(("tick", payload))


@pytest.fixture(autouse=True)
def _clear() -> None:
    FIRED.clear()


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_a_delayed_schedule_fires_after_a_restart(tmp_path: Path) -> None:
    clock = FakeClock(1_000_000.0)
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    runtime.clock = clock
    agent = await runtime.get(Reminder, "r1")
    task = agent.schedule(2, "remind", {"text": "stand up"})
    assert task.next_run == 1_000_002.0
    assert await runtime.fire_due_alarms() == 0
    await runtime.close()  # the process goes away

    restarted = EmbeddedRuntime(tmp_path, idle_timeout=None)
    restarted.clock = FakeClock(1_000_003.0)
    restarted.register(Reminder)
    assert restarted.live() == []
    assert await restarted.fire_due_alarms() == 1
    assert FIRED == [("r1", {"text": "stand up"})]
    agent = await restarted.get(Reminder, "r1")
    assert agent.get_schedules() == []
    assert await restarted.fire_due_alarms() == 0  # ran exactly once
    await restarted.close()


class Heartbeat(Agent):
    """A one-shot wake-up that schedules itself again (as recovery's keep-alive does)."""

    def beat(self, payload: Any) -> None:
        FIRED.append(("beat", payload))
        if payload < 2:
            self.schedule(5, "beat", payload + 1, id="heartbeat")


async def test_a_one_shot_schedule_that_schedules_its_own_id_again_stays_scheduled(tmp_path: Path) -> None:
    clock = FakeClock(1_000_000.0)
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    runtime.clock = clock
    agent = await runtime.get(Heartbeat, "h")
    agent.schedule(1, "beat", 0, id="heartbeat")
    clock.now = 1_000_001.0
    assert await runtime.fire_due_alarms() == 1
    [again] = agent.get_schedules()  # the run scheduled it again: not deleted as done
    assert (again.id, again.payload, again.next_run) == ("heartbeat", 1, 1_000_006.0)
    assert runtime.alarms.earliest() == 1_000_006.0
    clock.now = 1_000_006.0
    assert await runtime.fire_due_alarms() == 1
    clock.now = 1_000_011.0
    assert await runtime.fire_due_alarms() == 1
    assert FIRED == [("beat", 0), ("beat", 1), ("beat", 2)]
    assert agent.get_schedules() == [] and runtime.alarms.earliest() is None  # it did not re-arm: done
    await runtime.close()


async def test_an_alarm_wakes_an_agent_of_a_class_the_restarted_process_never_registered(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    runtime.clock = FakeClock(1_000_000.0)
    (await runtime.get(Reminder, "r2")).schedule(2, "remind", "found by its class path")
    await runtime.close()

    restarted = EmbeddedRuntime(tmp_path, idle_timeout=None)  # serves nothing: no register()
    restarted.clock = FakeClock(1_000_003.0)
    assert await restarted.fire_due_alarms() == 1
    assert FIRED == [("r2", "found by its class path")]
    await restarted.close()


async def test_an_alarm_of_a_class_that_cannot_be_imported_waits(tmp_path: Path) -> None:
    class Local(Reminder):  # defined in a function: no importable path
        pass

    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    runtime.clock = FakeClock(1_000_000.0)
    (await runtime.get(Local, "l")).schedule(2, "remind", "later")
    await runtime.close()

    restarted = EmbeddedRuntime(tmp_path, idle_timeout=None)
    restarted.clock = FakeClock(1_000_003.0)
    assert await restarted.fire_due_alarms() == 0 and FIRED == []
    restarted.register(Local)  # a process that serves the class wakes it
    assert await restarted.fire_due_alarms() == 1 and FIRED == [("l", "later")]
    await restarted.close()


async def test_a_cron_task_fires_on_time_and_missed_runs_are_not_backfilled(tmp_path: Path) -> None:
    clock = FakeClock(1_800_000_000.0)  # 2027-01-15 08:00 UTC
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    runtime.clock = clock
    agent = await runtime.get(Reminder, "cron")
    task = agent.schedule("*/10 * * * *", agent.tick, "t", id="ticker")
    assert task.kind == "recurring" and task.next_run == 1_800_000_600.0
    clock.now = 1_800_000_599.0
    assert await runtime.fire_due_alarms() == 0
    clock.now = 1_800_000_600.0
    assert await runtime.fire_due_alarms() == 1
    assert agent.schedules.get("ticker").next_run == 1_800_001_200.0  # type: ignore[union-attr]
    clock.now = 1_800_000_600.0 + 3 * 3600  # down for three hours: 18 runs missed
    assert await runtime.fire_due_alarms() == 0
    assert FIRED == [("tick", "t")]
    assert agent.schedules.get("ticker").next_run > clock.now  # type: ignore[union-attr]
    assert agent.cancel_schedule("ticker") and agent.get_schedules() == []
    await runtime.close()


class Signal(Reminder):
    fired: anyio.Event

    async def remind(self, payload: Any) -> None:
        await super().remind(payload)
        type(self).fired.set()


async def test_the_alarm_loop_fires_in_real_time(tmp_path: Path) -> None:
    Signal.fired = anyio.Event()
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Signal, "live")
    async with anyio.create_task_group() as tg:
        tg.start_soon(runtime.run_alarms)
        started = anyio.current_time()
        agent.schedule(timedelta(seconds=0.2), "remind", "now")
        with anyio.fail_after(5):
            await Signal.fired.wait()
        assert anyio.current_time() - started >= 0.19
        tg.cancel_scope.cancel()
    assert FIRED == [("live", "now")]
    await runtime.close()


async def test_bad_schedules_are_refused(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Reminder, "bad")
    with pytest.raises(ConfigurationError):
        agent.schedule("every fortnight", "remind")
    with pytest.raises(ConfigurationError, match="no method"):
        agent.schedule(1, "nope")
    with pytest.raises(ConfigurationError):
        agent.schedule(-5, "remind")
    assert agent.get_schedules() == []
    await runtime.close()
