"""A process for `test_a_killed_turn_keeps_the_calls_it_finished`: a tool step that reports its
usage, then a second model call that hangs until the process is killed."""

from __future__ import annotations

import sys
from typing import Any

import anyio

from tests.shared_tools import add
from think import Think, open_agent
from think.hooks import StepRecord
from think.testing import HANG, ScriptedModel, call, text, usage


class Killed(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel([[call("add", a=1, b=2), usage(input=1200, output=30, cached=1000)],
                              [text("The answer is"), HANG]], model_id="openai:gpt-4.1-mini")

    def get_tools(self) -> list[Any]:
        return [add]

    async def on_step_finish(self, step: StepRecord) -> None:
        print(f"step {step.step_number} finished", flush=True)


async def main(data_dir: str) -> None:
    async with open_agent(Killed, "k", data_dir=data_dir) as agent:
        await agent.save_messages(["1 + 2?"])


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
