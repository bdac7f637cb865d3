"""A daily reporter: it keeps a journal during the day and writes a report every evening at 18:00.

    think serve examples/daily_reporter.py:DailyReporter      # the server's alarm loop fires the task
    python examples/daily_reporter.py                         # offline: a day's journal, the task fired now

During the day, anything may add to the journal of the next report: the model (`note` tool, "note that the
deploy went out"), a page or a script (`await client.call("log", ["deploy 1.4 went out"])`).
`get_scheduled_tasks()` declares the recurring task; on every start it is reconciled into the
agent's durable schedules, and a served process fires it from its alarm loop, also after a
restart (a run missed by more than a minute is not made up later).

Each run is one durable submission whose idempotency key names the day
(`scheduled-task:daily-report@<time>`): a run fired twice, say by a crash between firing and
recording it, is one turn, and a process killed during the turn finishes it after the restart.
When the turn ends, `on_chat_response` writes the model's reply to `/reports/<day>.md` in the
workspace (the web UI's files panel shows it).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

from think import ScheduledTaskSpec, Think, ToolContext, callable, open_agent, tool
from think.messages import Message
from think.models.base import ModelRequest, ToolMessage
from think.scheduling.tasks import TASK_PREFIX, ScheduledTaskContext
from think.testing import ScriptedModel, call
from think.testing.models import Reply
from think.turns.turn import TurnResult

REPORT_ID_PREFIX = "daily-report-"
"""The user message of a report turn has the id `daily-report-<day>-<hash>`: how the hook finds the day."""


def report_day(agent: Think) -> str:
    """The day of the next report (UTC): what is noted after 18:00 goes into tomorrow's."""
    task = agent.schedules.get(TASK_PREFIX + "daily-report")
    when = task.next_run if task is not None else agent.schedules.clock()
    return datetime.fromtimestamp(when, UTC).date().isoformat()


async def append_to_journal(agent: Think, entry: str) -> str:
    day = report_day(agent)
    stamp = datetime.fromtimestamp(agent.schedules.clock(), UTC).strftime("%H:%M")
    await agent.workspace.append_file(f"/journal/{day}.md", f"- {stamp} {entry.strip()}\n")
    return day


@tool
async def note(ctx: ToolContext, entry: str) -> str:
    """Add an entry to the journal of the next report.

    Args:
        entry: What happened, in one line.
    """
    return f"Noted in the journal of {await append_to_journal(ctx.agent, entry)}."


class DailyReporter(Think):
    """Keeps a daily journal and writes a report from it every day at 18:00 (UTC)."""

    workspace_bash = False
    report_time = "every day at 18:00"
    welcome = "I keep today's journal and write the report at 18:00 UTC. Tell me what happened."
    suggestions = ("Note that the 1.4 release went out.", "What is in today's journal?",
                   "Read yesterday's report.")

    def get_system_prompt(self) -> str:
        return ("You keep a team's daily journal. When told something happened, add it with `note`. "
                "When asked for the daily report, write it in Markdown: a one-line summary, then the "
                "notable events as bullets, then anything left open. Only use what the journal says.")

    def get_tools(self) -> list[Any]:
        return [note]

    def get_scheduled_tasks(self) -> dict[str, ScheduledTaskSpec]:
        return {"daily-report": ScheduledTaskSpec(schedule=self.report_time, handler="write_daily_report")}

    @callable(description="Add an entry to the journal of the next report.")
    async def log(self, entry: str) -> str:
        return await append_to_journal(self, entry)

    async def write_daily_report(self, ctx: ScheduledTaskContext) -> None:
        """The scheduled task: ask for the report of the day it runs for, as a durable submission."""
        day = ctx.scheduled_for_date.date().isoformat()
        journal = await self.workspace.read_file(f"/journal/{day}.md") or "(nothing was noted)\n"
        prompt = f"Write the daily report for {day}. Today's journal:\n\n{journal}"
        message_id = f"{REPORT_ID_PREFIX}{day}-{uuid.uuid5(uuid.NAMESPACE_URL, ctx.idempotency_key).hex[:8]}"
        await self.submit_messages([Message.user(prompt, id=message_id)], idempotency_key=ctx.idempotency_key,
                                   metadata={"report": day})

    async def on_chat_response(self, result: TurnResult) -> None:
        """A report turn ended: keep its answer as `/reports/<day>.md`."""
        asked = next((i for i in result.user_message_ids if i.startswith(REPORT_ID_PREFIX)), None)
        if asked is None or result.status != "completed" or result.message is None:
            return
        day = asked[len(REPORT_ID_PREFIX):len(REPORT_ID_PREFIX) + 10]
        await self.workspace.write_file(f"/reports/{day}.md", result.message.text)


def report_model(request: ModelRequest) -> Reply:
    """A stand-in for a real model: it notes what it is told, and its report lists the journal."""
    prompt = request.last_user_text
    if request.messages and isinstance(request.messages[-1], ToolMessage):
        return str(request.messages[-1].results[-1].output)
    if prompt.lower().startswith("note that "):
        return call("note", entry=prompt[len("note that "):])
    if not prompt.startswith("Write the daily report for "):
        return "Tell me what happened, or ask for the report."
    day = prompt.split()[5].rstrip(".")
    entries = [line[2:] for line in prompt.splitlines() if line.startswith("- ")]
    count = f"{len(entries)} event{'' if len(entries) == 1 else 's'} today."
    return "\n".join([f"# Daily report, {day}", "", count, "", *(f"* {entry}" for entry in entries)])


class OfflineDailyReporter(DailyReporter):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(report_model)


async def main() -> None:
    """A day in a minute: log two entries, run the next report now instead of at 18:00, print it."""
    async with open_agent(OfflineDailyReporter, "demo", data_dir=".think-example") as agent:
        await agent.log("the 1.4 release went out")
        await agent.log("the on-call handover is at 09:00 tomorrow")
        day = report_day(agent)
        task = agent.schedules.get(TASK_PREFIX + "daily-report")
        assert task is not None
        await agent.run_due_schedules(now=task.next_run)  # what the alarm loop does at 18:00
        await agent.wait_until_stable(timeout=30)
        print(await agent.workspace.read_file(f"/reports/{day}.md"))


if __name__ == "__main__":
    asyncio.run(main())
