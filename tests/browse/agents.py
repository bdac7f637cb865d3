"""Agents whose data directories the agents-browser tests read: scripted models, real turns.

`Notes` answers `Noted: <what was said>`, and `slow …` with `part one ` before it waits until
the turn is cancelled (so a test can read the data directory while a turn is running).
`Counter` is a plain `Agent` (no transcript at all).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from think import Agent, Think, open_agent
from think.models.base import ModelRequest
from think.testing import HANG, ScriptedModel, text
from think.testing.models import Reply
from think.turns.turn import TurnRequest


def script(request: ModelRequest) -> Reply:
    said = request.last_user_text
    if said.startswith("slow"):
        return [text("part one "), HANG]
    return f"Noted: {said}"


class Notes(Think):
    """Served at `/agents/notes/<name>`."""

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script, model_id="scripted-notes")

    def get_tools(self) -> None:
        return None


class Counter(Agent):
    """An agent with state and no conversation."""

    initial_state: ClassVar[dict[str, int]] = {"count": 0}


LONG_NAME = "a-long-name-" + "x" * 150
"""Too long to keep whole in a file name."""


async def fill(data_dir: Path) -> dict[str, list[str]]:
    """Real turns into `data_dir`: `notes/alice` (two turns), `notes/bob` (a question answered three
    times: three branches), `notes/<LONG_NAME>`, and `counter/c1` (no messages). Returns bob's
    question id under "question" and his answers' ids (oldest first) under "answers"."""
    async with open_agent(Notes, "alice", data_dir=data_dir) as agent:
        agent.workspace_bash = False
        assert (await agent.save_messages(["Plan the offsite\nwith details"])).status == "completed"
        assert (await agent.save_messages(["Add a budget"])).status == "completed"
    async with open_agent(Notes, "bob", data_dir=data_dir) as agent:
        agent.workspace_bash = False
        [question] = await agent.add_messages(["Name a cat"])
        answers = []
        for n in range(3):  # what the UI's "regenerate" does: another answer to the same question
            result = await agent.run(TurnRequest(request_id=f"regen-{n}", parent_id=question.id))
            assert result.status == "completed" and result.message is not None
            answers.append(result.message.id)
    async with open_agent(Notes, LONG_NAME, data_dir=data_dir) as agent:
        agent.workspace_bash = False
        assert (await agent.save_messages(["Long one"])).status == "completed"
    async with open_agent(Counter, "c1", data_dir=data_dir) as counter:
        await counter.set_state({"count": 1})
    return {"question": [question.id], "answers": answers}
