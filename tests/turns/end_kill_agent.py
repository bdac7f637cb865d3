"""A process whose turn is SIGKILLed right after its reply was stored, before the turn has ended.

    python -m tests.turns.end_kill_agent DATA_DIR after-reply|after-question

It answers "Weather in Lisbon?" (a tool call, then text) and kills itself with SIGKILL when the
transcript first shows the stored answer: after the turn's last commit, before `recovery.end`.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import anyio

from think import Think, tool
from think.stream.fanout import TranscriptChanged
from think.testing.models import ScriptedModel, call

ANSWER = "It is 21 degrees and clear in Lisbon."


@tool
def lookup(city: str) -> dict[str, object]:
    """Look up the weather in a city."""
    return {"city": city, "temperature": 21}


def _reply(request: Any) -> Any:
    if request.messages and request.messages[-1].role == "tool":
        return ANSWER
    return [call("lookup", city="Lisbon")]


class Weather(Think):
    model = ScriptedModel(_reply)
    kill_after_reply = False
    kill_after_question = False

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> list[object]:
        return [lookup]

    async def on_start(self) -> None:
        await super().on_start()
        if self.kill_after_reply:
            self.fanout.subscribe(self._kill_once_answered)
        if self.kill_after_question:
            self.fanout.subscribe(self._kill_once_asked)

    async def _kill_once_answered(self, event: object) -> None:
        if isinstance(event, TranscriptChanged) and event.messages and event.messages[-1].text == ANSWER:
            os.kill(os.getpid(), signal.SIGKILL)


    async def _kill_once_asked(self, event: object) -> None:
        if isinstance(event, TranscriptChanged) and event.messages and event.messages[-1].role == "user":
            os.kill(os.getpid(), signal.SIGKILL)


async def main(data_dir: str, where: str) -> None:
    from think.runtime.embedded import EmbeddedRuntime

    if where == "after-reply":
        Weather.kill_after_reply = True
    else:
        Weather.kill_after_question = True
    runtime = EmbeddedRuntime(data_dir)
    async with runtime.lease(Weather, "w") as agent:
        await agent.chat("Weather in Lisbon?")
    print("NOT KILLED", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
