"""The daily-reporter example under a fake clock: the 18:00 task runs one turn per day and files the report."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from think import EmbeddedRuntime
from think.scheduling.tasks import TASK_PREFIX

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "daily_reporter.py"
T0 = datetime(2027, 1, 15, 8, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0
REPORT = "\n".join(["# Daily report, 2027-01-15", "", "2 events today.", "",
                    "* 09:00 the 1.4 release went out", "* 12:30 on-call handover moved to Monday"])


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_daily_reporter", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_evening_task_writes_one_report_per_day_from_the_journal(tmp_path: Path) -> None:
    module = load()
    clock = FakeClock(T0)
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    runtime.clock = clock
    agent = await runtime.get(module.OfflineDailyReporter, "team")
    [task] = [t for t in agent.get_schedules() if t.id == TASK_PREFIX + "daily-report"]
    assert (task.kind, task.next_run) == ("recurring", T0 + 10 * HOUR)  # 18:00 UTC

    clock.now = T0 + 1 * HOUR
    await agent.log("the 1.4 release went out")  # a page or a script, over RPC
    clock.now = T0 + 4.5 * HOUR
    result = await agent.save_messages("Note that on-call handover moved to Monday")  # the model, with `note`
    assert result.status == "completed" and agent.messages[-1].text == "Noted in the journal of 2027-01-15."

    clock.now = T0 + 10 * HOUR - 1
    await runtime.fire_due_alarms()  # the framework's own wake-ups may run; the report's is not due
    assert agent.list_submissions() == [] and not await agent.workspace.exists("/reports")
    clock.now = T0 + 10 * HOUR
    assert await runtime.fire_due_alarms() == 1
    [submission] = agent.list_submissions()
    assert submission.idempotency_key == "scheduled-task:daily-report@2027-01-15T18:00:00Z"
    assert (await agent.wait_for_submission(submission.submission_id, timeout=10)).status == "completed"
    assert await agent.workspace.read_file("/reports/2027-01-15.md") == REPORT

    # The same occurrence fired again (a crash between firing and recording it): still one turn.
    agent.sql("UPDATE think_schedules SET next_run = ? WHERE id = ?", T0 + 10 * HOUR, TASK_PREFIX + "daily-report")
    turns = len(agent.messages)
    assert await agent.run_due_schedules() == 1
    assert len(agent.list_submissions()) == 1 and len(agent.messages) == turns

    clock.now = T0 + 12 * HOUR  # 20:00: this goes into tomorrow's report
    assert await agent.log("the build is red") == "2027-01-16"
    await runtime.close()

    # The next evening, in a restarted process: the schedule was kept, and fires.
    clock.now = T0 + 34 * HOUR
    restarted = EmbeddedRuntime(tmp_path, idle_timeout=None)
    restarted.clock = clock
    restarted.register(module.OfflineDailyReporter)
    assert await restarted.fire_due_alarms() == 1
    agent = await restarted.get(module.OfflineDailyReporter, "team")
    [_, second] = sorted(agent.list_submissions(), key=lambda s: s.idempotency_key or "")
    assert (await agent.wait_for_submission(second.submission_id, timeout=10)).status == "completed"
    report = await agent.workspace.read_file("/reports/2027-01-16.md")
    assert report == "# Daily report, 2027-01-16\n\n1 event today.\n\n* 20:00 the build is red"
    await restarted.close()
