"""The conversation tree for clients: `message_details`, `switch_branch` and `edit_message`
(callables of every `Think`), in process and over a live server with two clients."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.chat.live_server import serve_in_thread
from think import Message, ProtocolError, Think, open_agent
from think.client import AgentClient
from think.client.calls import RpcError
from think.models.base import ModelRequest
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.testing import HANG, ScriptedModel, text
from think.turns.turn import TurnRequest


class Counting(Think):
    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.answers = 0
        self.hanging = anyio.Event()

        def reply(request: ModelRequest) -> Any:
            self.answers += 1
            if request.last_user_text.startswith("hang"):
                self.hanging.set()
                return [text("thinking about it"), HANG]
            return f"answer {self.answers} to {request.last_user_text}"

        self.model = ScriptedModel(reply)

    def get_model(self) -> ScriptedModel:
        return self.model


def texts(agent: Think) -> list[str]:
    return [m.text for m in agent.messages]


async def test_a_regenerated_answer_is_listed_as_an_alternative_and_switching_shows_the_old_one(
        data_dir: Path) -> None:
    async with open_agent(Counting, "alts", data_dir=data_dir) as agent:
        await agent.save_messages(Message.user("first", id="u1"))
        await agent.regenerate()
        old, new = (m.id for m in agent.session.get_branches("u1"))
        details = await agent.message_details()
        assert [d["id"] for d in details] == ["u1", new]
        assert "branch_count" not in details[0] and isinstance(details[0]["created_at"], float)
        assert {k: details[1][k] for k in ("branch_index", "branch_count", "branch_ids")} == {
            "branch_index": 1, "branch_count": 2, "branch_ids": [old, new]}

        assert await agent.switch_branch(old) == {"status": "switched", "message_id": old}
        assert texts(agent) == ["first", "answer 1 to first"]
        assert (await agent.message_details())[1]["branch_index"] == 0


async def test_editing_a_question_adds_a_branch_beside_it_that_is_answered(data_dir: Path) -> None:
    async with open_agent(Counting, "edit", data_dir=data_dir) as agent:
        await agent.save_messages(Message.user("first", id="u1"))
        await agent.save_messages(Message.user("second", id="u2"))
        started = await agent.edit_message("u2", "second, edited")
        assert started["status"] == "started" and agent.is_busy()  # busy at once: nothing slips in
        assert texts(agent)[-1] == "second, edited"  # stored before the call returned
        assert await agent.wait_until_stable(timeout=10)
        assert texts(agent) == ["first", "answer 1 to first", "second, edited", "answer 3 to second, edited"]
        edited = started["message_id"]
        assert [m.id for m in agent.session.get_branches(agent.messages[1].id)] == ["u2", edited]
        assert agent.messages[2].metadata == {"channel": "web"}  # stored as a web user message

        await agent.switch_branch("u2")  # back to the original question, with its answer
        assert texts(agent) == ["first", "answer 1 to first", "second", "answer 2 to second"]


async def test_the_first_question_can_be_edited_too(data_dir: Path) -> None:
    async with open_agent(Counting, "root", data_dir=data_dir) as agent:
        await agent.save_messages(Message.user("first", id="u1"))
        started = await agent.edit_message("u1", "first, edited")
        assert await agent.wait_until_stable(timeout=10)
        assert texts(agent) == ["first, edited", "answer 2 to first, edited"]
        details = await agent.message_details()
        assert details[0]["branch_ids"] == ["u1", started["message_id"]] and details[0]["branch_index"] == 1
        await agent.switch_branch("u1")
        assert texts(agent) == ["first", "answer 1 to first"]
    async with open_agent(Counting, "root", data_dir=data_dir) as agent:  # and so it stays
        assert texts(agent) == ["first", "answer 1 to first"]
        assert len((await agent.message_details())[0]["branch_ids"]) == 2


async def test_bad_edits_and_switches_are_refused_with_a_reason(data_dir: Path) -> None:
    async with open_agent(Counting, "bad", data_dir=data_dir) as agent:
        await agent.save_messages(Message.user("first", id="u1"))
        answer = agent.messages[1].id
        with pytest.raises(ProtocolError, match="only user messages can be edited"):
            await agent.edit_message(answer, "x")
        with pytest.raises(ProtocolError, match="non-empty string"):
            await agent.edit_message("u1", "  ")
        with pytest.raises(ProtocolError, match="no message 'ghost' on the active branch"):
            await agent.edit_message("ghost", "x")
        with pytest.raises(ProtocolError, match="no message 'ghost' in this conversation"):
            await agent.switch_branch("ghost")
        with pytest.raises(ProtocolError, match="non-empty string"):
            await agent.switch_branch(7)  # type: ignore[arg-type]
        with pytest.raises(ProtocolError, match="at most 100000"):
            await agent.edit_message("u1", "x" * 100_001)
        assert texts(agent) == ["first", "answer 1 to first"]  # nothing changed

        running = agent.start_turn(TurnRequest(request_id="hanging", messages=[Message.user("hang on")]))
        assert agent.is_busy()  # at once, before the turn's task has run a step
        with pytest.raises(ProtocolError, match="an answer is being written"):
            await agent.edit_message("u1", "x")
        with pytest.raises(ProtocolError, match="an answer is being written"):
            await agent.switch_branch("u1")
        with anyio.fail_after(10):
            await agent.hanging.wait()  # the model is answering: stop it
        agent.cancel_chat("hanging")
        assert (await running).status == "aborted"
        assert not agent.is_busy()


async def test_every_tab_follows_a_switch_and_sees_an_edit_answered(tmp_path: Path) -> None:
    app = create_app([Counting], runtime=EmbeddedRuntime(tmp_path))
    with serve_in_thread(app) as server:
        url = server.agent_url("counting", "tabs")
        async with AgentClient.connect(url) as one, AgentClient.connect(url) as two:
            await one.send_chat("hello")
            await two.wait_until(lambda c: [m.text for m in c.messages] == ["hello", "answer 1 to hello"])
            question = one.messages[0].id
            started = await one.call("edit_message", question, "hello again")
            assert started["status"] == "started"
            edited = ["hello again", "answer 2 to hello again"]
            with anyio.fail_after(10):
                await two.wait_until(lambda c: [m.text for m in c.messages] == edited)
                await one.wait_until(lambda c: [m.text for m in c.messages] == edited)
            await two.call("switch_branch", question)
            with anyio.fail_after(10):
                await one.wait_until(lambda c: [m.text for m in c.messages] == ["hello", "answer 1 to hello"])
            with pytest.raises(RpcError, match="only user messages can be edited"):
                await one.call("edit_message", one.messages[1].id, "x")
