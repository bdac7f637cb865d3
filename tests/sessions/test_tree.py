"""The message tree: idempotent appends, upserts, branches, switching, and regeneration."""

from __future__ import annotations

from pathlib import Path

import pytest

from think import Message, StorageError, Think, TurnRequest, open_agent
from think.sessions import MIGRATIONS, Session
from think.storage import Database, migrate
from think.testing.models import ScriptedModel


@pytest.fixture
def session(tmp_path: Path) -> Session:
    db = Database(tmp_path / "tree.db")
    migrate(db, MIGRATIONS)
    return Session(db)


def answer(id: str, text: str) -> Message:
    return Message.from_json({"id": id, "role": "assistant", "parts": [{"type": "text", "text": text}]})


def test_append_is_idempotent_by_id(session: Session) -> None:
    first = [Message.user("hello", id="u1"), answer("a1", "hi")]
    session.add_messages(first)
    session.add_messages([Message.user("hello, edited", id="u1"), answer("a1", "hi again")])
    assert [(m.id, m.text) for m in session.history()] == [("u1", "hello"), ("a1", "hi")]
    assert session.count_rows() == 2
    # A resend of the whole transcript plus one new message appends only the new one.
    session.add_messages([*first, Message.user("more", id="u2")])
    assert [m.id for m in session.history()] == ["u1", "a1", "u2"]


def test_upsert_replaces_content_in_place_without_re_parenting(session: Session) -> None:
    session.add_messages([Message.user("q", id="u1"), answer("a1", "one"), Message.user("next", id="u2")])
    session.add_messages([answer("a1", "one, corrected")], mode="upsert")
    assert [(m.id, m.text) for m in session.history()] == [("u1", "q"), ("a1", "one, corrected"), ("u2", "next")]
    reopened = Session(session.db)
    assert [m.text for m in reopened.history()] == ["q", "one, corrected", "next"]


def test_entries_chain_under_an_explicit_parent(session: Session) -> None:
    session.add_messages([Message.user("q", id="u1"), answer("a1", "first")])
    session.add_messages([answer("a2", "second"), Message.user("follow-up", id="u2")], parent_id="u1")
    assert [m.id for m in session.history()] == ["u1", "a2", "u2"]
    assert [m.id for m in session.get_branches("u1")] == ["a1", "a2"]
    assert [m.id for m in session.get_branches("a2")] == ["u2"]


def test_a_bad_parent_is_a_clear_error_and_writes_nothing(session: Session) -> None:
    session.add_messages([Message.user("q", id="u1")])
    with pytest.raises(StorageError, match="no message 'ghost' in session ''"):
        session.add_messages([answer("a1", "x")], parent_id="ghost")
    with pytest.raises(StorageError, match="no message 'ghost'"):
        session.get_branches("ghost")
    assert session.count_rows() == 1
    assert [m.id for m in Session(session.db).history()] == ["u1"]


def test_switching_branches_follows_a_branch_to_its_newest_message(session: Session) -> None:
    session.add_messages([Message.user("q", id="u1"), answer("a1", "first"), Message.user("on a1", id="u2"),
                          answer("a3", "deep")])
    session.add_messages([answer("a2", "second")], parent_id="u1")
    assert [m.id for m in session.history()] == ["u1", "a2"]
    version = session.version
    session.switch_branch("a1")
    assert [m.id for m in session.history()] == ["u1", "a1", "u2", "a3"]
    assert session.version > version  # cached model histories must not survive a branch switch
    assert [m.id for m in Session(session.db).history()] == ["u1", "a1", "u2", "a3"]  # the switch is stored
    session.checkout("u2")
    assert session.leaf_id == "u2"


class Regen(Think):
    model = ScriptedModel(lambda request: f"answer {len(request.messages)}")

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> None:
        return None


async def test_regenerating_three_times_lists_three_branches(data_dir: Path) -> None:
    async with open_agent(Regen, "regen", data_dir=data_dir) as agent:
        agent.workspace_bash = False
        [question] = await agent.add_messages(["What is a good name for a cat?"])
        replies = []
        for n in range(3):  # what a `regenerate-message` request does: a new answer to the same message
            result = await agent.run(TurnRequest(request_id=f"regen-{n}", parent_id=question.id))
            assert result.status == "completed"
            replies.append(result.message)
        branches = agent.session.get_branches(question.id)
        assert [m.id for m in branches] == [r.id for r in replies if r is not None]
        assert [m.role for m in branches] == ["assistant"] * 3
        # The newest answer is the active branch; the older ones stay reachable.
        assert [m.id for m in agent.messages] == [question.id, branches[-1].id]
        agent.session.switch_branch(branches[0].id)
        assert [m.id for m in agent.messages] == [question.id, branches[0].id]
    async with open_agent(Regen, "regen", data_dir=data_dir) as agent:
        assert [m.id for m in agent.messages] == [question.id, branches[0].id]
        assert len(agent.session.get_branches(question.id)) == 3


def test_an_idempotent_append_under_a_parent_moves_nothing(session: Session) -> None:
    session.add_messages([Message.user("q", id="u1"), answer("a1", "x"), Message.user("more", id="u2")])
    session.add_messages([answer("a1", "x")], parent_id="u1")  # already stored: no new branch, no move
    assert [m.id for m in session.history()] == ["u1", "a1", "u2"]
    assert [m.id for m in Session(session.db).history()] == ["u1", "a1", "u2"]
