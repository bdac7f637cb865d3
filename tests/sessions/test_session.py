"""The session's message tree and what storage does to a message."""

from __future__ import annotations

from pathlib import Path

import pytest

from think import StorageError
from think.messages import Message
from think.sessions import Session
from think.sessions.hygiene import MAX_PART_BYTES, prepare_for_storage
from think.sessions.session import MIGRATIONS
from think.storage import Database, migrate


@pytest.fixture
def session(tmp_path: Path) -> Session:
    db = Database(tmp_path / "s.db")
    migrate(db, MIGRATIONS)
    return Session(db)


def reply(id: str, text: str) -> Message:
    return Message.from_json({"id": id, "role": "assistant", "parts": [{"type": "text", "text": text}]})


def test_append_upsert_and_branching_keep_every_message(session: Session) -> None:
    session.save([Message.user("q", id="u1"), reply("a1", "first")])
    session.save([reply("a2", "second")], parent_id="u1")  # a sibling of a1
    assert [m.id for m in session.history()] == ["u1", "a2"]
    assert session.count_rows() == 3  # a1 is still stored, on its own branch
    session.checkout("a1")
    assert [m.id for m in session.history()] == ["u1", "a1"]
    reopened = Session(session.db)
    assert [m.text for m in reopened.history()] == ["q", "first"]


def test_unchanged_writes_are_skipped_and_changes_written(session: Session) -> None:
    session.save([Message.user("q", id="u1")])
    version = session.version
    session.save([Message.user("q", id="u1")])
    assert session.db.value("SELECT count(*) FROM think_messages") == 1
    session.save([Message.user("edited", id="u1")])
    assert Session(session.db).history()[0].text == "edited"
    assert session.version > version


def test_unknown_parents_are_refused_and_ids_elsewhere_are_never_re_parented(session: Session) -> None:
    session.save([Message.user("q", id="u1"), reply("a1", "x")])
    with pytest.raises(StorageError, match="no message 'nope'"):
        session.save([reply("a2", "y")], parent_id="nope")
    assert session.count_rows() == 2  # nothing was written
    session.save([reply("a2", "y")], parent_id="u1")
    session.save([reply("a1", "again")])  # a1 is on the other branch: updated in place, not moved
    assert [m.id for m in session.history()] == ["u1", "a2"]
    assert session.get_message("a1") is not None and session.get_message("a1").text == "again"  # type: ignore[union-attr]
    with pytest.raises(StorageError):
        session.checkout("missing")


def test_provider_ephemera_are_not_stored() -> None:
    message = Message.from_json({"id": "a", "role": "assistant", "parts": [
        {"type": "reasoning", "text": "", "state": "done"},
        {"type": "reasoning", "text": "kept",
         "providerMetadata": {"openai": {"itemId": "i", "reasoningEncryptedContent": "e"}}},
        {"type": "text", "text": "t", "providerMetadata": {"openai": {"itemId": "i", "other": 1}}},
    ]})
    clean = prepare_for_storage(message)
    assert clean.to_json()["parts"] == [
        {"type": "reasoning", "text": "kept"},
        {"type": "text", "text": "t", "providerMetadata": {"openai": {"other": 1}}},
    ]
    assert len(message.parts) == 3  # the original is untouched


def test_only_a_text_past_the_hard_cap_is_cut() -> None:
    under = reply("a", "z" * (MAX_PART_BYTES - 10))
    assert prepare_for_storage(under) is under  # large, but stored whole (split across rows)
    capped = prepare_for_storage(reply("a", "z" * (MAX_PART_BYTES + 10)))
    assert len(capped.dumps()) < MAX_PART_BYTES
    assert "too large to store" in capped.text
