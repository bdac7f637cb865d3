"""Cancelling a turn while its code runs stops the code; the execution is marked, the agent goes on."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.tools.execute.agents import Coder
from think import open_agent
from think.testing.models import ScriptedModel, call


async def test_cancel_during_an_execution_stops_it_and_marks_it(data_dir: Path) -> None:
    Coder.model = ScriptedModel([call("execute", code="tools.get_weather(city='a')\nwhile True:\n    pass"),
                                 call("execute", code="tools.get_weather(city='Oslo')['temp']"), "Back."])
    async with open_agent(Coder, "a", data_dir=data_dir) as agent:
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.save_messages, ["spin"])
            with anyio.fail_after(20):
                while not agent.executions(limit=1) or not agent.executions(limit=1)[0]["journal"]:  # noqa: ASYNC110
                    await anyio.sleep(0.01)  # the code is past its first host call, in the loop
            assert agent.cancel_all_chats() == 1
        [run] = agent.executions(limit=1)
        assert run["status"] == "cancelled" and "cancelled" in run["error"]
        await agent.save_messages(["again"])  # the next execution runs normally
        latest = agent.executions(limit=1)[0]
        assert latest["status"] == "completed" and latest["value"] == 12
