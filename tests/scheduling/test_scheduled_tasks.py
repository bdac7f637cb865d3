"""Declared scheduled tasks (`get_scheduled_tasks`) under a fake clock, and a schedule that fires in
a restarted server process."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from tests.submissions.server_process import eventually, serve_process
from think import EmbeddedRuntime, ScheduledTaskSpec, Think
from think.client import AgentClient
from think.scheduling import ScheduleError
from think.scheduling.tasks import TASK_PREFIX, ScheduledTaskContext
from think.testing.models import ScriptedModel


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


T0 = datetime(2027, 1, 15, 8, 0, tzinfo=UTC).timestamp()  # a Friday, 08:00 UTC (09:00 in Prague)


class Planner(Think):
    tasks: ClassVar[dict[str, Any]] = {
        "digest": {"schedule": "*/10 * * * *", "prompt": "Write the digest.", "metadata": {"team": "ops"}},
        "cleanup": ScheduledTaskSpec(schedule="every day at 09:30 in Europe/Prague", handler="cleanup"),
    }
    handled: ClassVar[list[ScheduledTaskContext]] = []

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: "Digest written.")

    def get_scheduled_tasks(self) -> dict[str, Any]:
        return type(self).tasks

    async def cleanup(self, ctx: ScheduledTaskContext) -> None:
        type(self).handled.append(ctx)


@pytest.fixture(autouse=True)
def _reset() -> None:
    Planner.handled = []
    Planner.tasks = dict(Planner.tasks)


async def started(tmp_path: Path, clock: FakeClock) -> tuple[EmbeddedRuntime, Planner]:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    runtime.clock = clock
    return runtime, await runtime.get(Planner, "team")


async def test_a_declared_cron_prompt_task_fires_on_time_and_submits_once_per_occurrence(tmp_path: Path) -> None:
    clock = FakeClock(T0 + 1)
    runtime, agent = await started(tmp_path, clock)
    rows = {t.id: t for t in agent.get_schedules()}
    assert rows[TASK_PREFIX + "digest"].next_run == T0 + 600 and rows[TASK_PREFIX + "digest"].kind == "recurring"
    clock.now = T0 + 599
    assert await runtime.fire_due_alarms() == 0
    clock.now = T0 + 600
    assert await runtime.fire_due_alarms() == 1
    [submission] = agent.list_submissions()
    assert submission.idempotency_key == "scheduled-task:digest@2027-01-15T08:10:00Z"
    assert submission.metadata == {"scheduledTask": "digest", "scheduledFor": "2027-01-15T08:10:00+00:00",
                                   "metadata": {"team": "ops"}}
    assert (await agent.wait_for_submission(submission.submission_id, timeout=5)).status == "completed"
    assert [m.text for m in agent.messages] == ["Write the digest.", "Digest written."]

    # The same occurrence fired again (a crash between firing and recording it): one turn.
    agent.sql("UPDATE think_schedules SET next_run = ? WHERE id = ?", T0 + 600, TASK_PREFIX + "digest")
    assert await agent.run_due_schedules() == 1
    assert len(agent.list_submissions()) == 1 and len(agent.messages) == 2
    await runtime.close()


async def test_a_handler_task_gets_its_occurrence_in_its_time_zone(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    runtime, _ = await started(tmp_path, clock)
    clock.now = T0 + 30 * 60  # 09:30 in Prague
    await runtime.fire_due_alarms()
    [ctx] = Planner.handled
    assert (ctx.task_id, ctx.scheduled_for, ctx.schedule_kind) == ("cleanup", T0 + 1800, "cron")
    assert ctx.idempotency_key == "scheduled-task:cleanup@2027-01-15T08:30:00Z"
    assert ctx.scheduled_for_date == datetime(2027, 1, 15, 8, 30, tzinfo=UTC)
    await runtime.close()


async def test_missed_runs_are_not_backfilled(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    runtime, agent = await started(tmp_path, clock)
    await runtime.close()
    clock.now = T0 + 5 * 3600  # the process was down for five hours
    runtime, agent = await started(tmp_path, clock)
    assert await runtime.fire_due_alarms() == 0
    assert agent.list_submissions() == [] and Planner.handled == []
    assert all(t.next_run > clock.now for t in agent.get_schedules())
    await runtime.close()


async def test_declarations_are_reconciled_on_start_and_bad_ones_are_clear_errors(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock(T0)
    runtime, agent = await started(tmp_path, clock)
    before = {t.id: t.next_run for t in agent.get_schedules()}
    await runtime.close()

    Planner.tasks = {
        "digest": Planner.tasks["digest"],                                     # unchanged: keeps its next run
        "cleanup": {"schedule": "61 * * * *", "handler": "cleanup"},            # broken: logged, row kept
        "weekly": {"schedule": "every week on monday at 10:00", "prompt": "Plan the week."},  # new
        "both": {"schedule": "every 5 minutes", "prompt": "x", "handler": "cleanup"},          # invalid
    }
    clock.now = T0 + 120
    runtime, agent = await started(tmp_path, clock)
    after = {t.id: t.next_run for t in agent.get_schedules()}
    assert after[TASK_PREFIX + "digest"] == before[TASK_PREFIX + "digest"]
    assert after[TASK_PREFIX + "cleanup"] == before[TASK_PREFIX + "cleanup"]
    assert TASK_PREFIX + "weekly" in after and TASK_PREFIX + "both" not in after
    assert "scheduled task 'cleanup' is skipped" in caplog.text and "out of range" in caplog.text
    assert "needs exactly one of prompt and handler" in caplog.text
    with pytest.raises(ScheduleError, match="out of range"):
        agent.schedule("61 * * * *", "cleanup")
    await runtime.close()

    Planner.tasks = {}
    runtime, agent = await started(tmp_path, clock)
    assert not any(t.id.startswith(TASK_PREFIX) for t in agent.get_schedules())  # removed declarations go
    await runtime.close()


async def test_a_schedule_fires_in_a_restarted_server_without_any_client(tmp_path: Path) -> None:
    reminders = tmp_path / "reminders.txt"
    env = {"THINK_DATA_DIR": str(tmp_path / "data"), "THINK_TEST_REMINDERS": str(reminders)}
    ready = "/agents/ledgered/probe/get-messages"
    with serve_process("tests.submissions.server_app:app", env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/ledgered/alarm", call_timeout=10) as client:
            asked = time.time()
            await client.call("schedule_reminder", 2, "stand up")
        server.kill()
    assert not reminders.exists()
    with serve_process("tests.submissions.server_app:app", env, ready_path=ready):
        await eventually(reminders.exists, within=20)
        assert time.time() - asked >= 2
        await anyio.sleep(0.3)
    assert reminders.read_text() == "alarm: stand up\n"  # once
