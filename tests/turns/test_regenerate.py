"""`Think.regenerate()`: a new answer to the same question, the old one kept as a sibling branch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from think import Message, ProtocolError, Think, open_agent
from think.models.base import ModelRequest
from think.testing.models import ScriptedModel


class Counting(Think):
    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.answers = 0

        def reply(request: ModelRequest) -> str:
            self.answers += 1
            return f"answer {self.answers} to {request.last_user_text}"

        self.model = ScriptedModel(reply)

    def get_model(self) -> ScriptedModel:
        return self.model


async def test_regenerate_replaces_the_last_answer_and_keeps_the_old_one_as_a_branch(data_dir: Path) -> None:
    async with open_agent(Counting, "regen", data_dir=data_dir) as agent:
        await agent.save_messages(Message.user("first", id="u1"))
        await agent.save_messages(Message.user("second", id="u2"))
        result = await agent.regenerate()
        assert result.status == "completed" and result.message is not None
        assert [m.text for m in agent.messages] == ["first", "answer 1 to first", "second", "answer 3 to second"]
        assert [m.text for m in agent.session.get_branches("u2")] == ["answer 2 to second", "answer 3 to second"]


async def test_regenerate_an_earlier_answer_by_its_id_answers_its_question_again(data_dir: Path) -> None:
    async with open_agent(Counting, "by-id", data_dir=data_dir) as agent:
        await agent.save_messages(Message.user("first", id="u1"))
        first_answer = agent.messages[-1].id
        await agent.save_messages(Message.user("second", id="u2"))
        result = await agent.regenerate(first_answer)
        assert result.status == "completed"
        assert [m.text for m in agent.messages] == ["first", "answer 3 to first"]
        again = await agent.regenerate("u1")  # the id of the question works too
        assert again.status == "completed" and [m.text for m in agent.messages][-1] == "answer 4 to first"


async def test_regenerate_with_nothing_to_answer_is_skipped_and_an_unknown_id_is_refused(data_dir: Path) -> None:
    async with open_agent(Counting, "none", data_dir=data_dir) as agent:
        assert (await agent.regenerate()).status == "skipped"
        await agent.save_messages("hi")
        with pytest.raises(ProtocolError, match="no-such"):
            await agent.regenerate("no-such")
