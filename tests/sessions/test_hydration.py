"""Bounded memory: only a window of a huge transcript is in memory; the model sees it plus summaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from think import Message, Think, open_agent
from think.sessions import MIGRATIONS, Session
from think.storage import Database, migrate
from think.testing.models import ScriptedModel


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(tmp_path / "h.db")
    migrate(database, MIGRATIONS)
    return database


def fill(session: Session, count: int, size: int = 200) -> None:
    session.add_messages([Message.user(f"{i:05d} " + "x" * size, id=f"m{i}") for i in range(count)])


def stored_bytes(session: Session) -> int:
    return sum(len(b) for b in session.history_json())


def test_only_the_newest_messages_within_the_budget_are_loaded(db: Database) -> None:
    fill(Session(db), 200)
    session = Session(db, hydration_byte_budget=2_000)
    window = session.history()
    assert session.windowed
    assert [m.id for m in window][-1] == "m199" and 8 <= len(window) <= 10
    assert stored_bytes(session) <= 2_000 + 300  # the message that crosses the budget is the last one in
    assert session.get("m0") is None and session.get_message("m0") is not None  # still stored
    assert Session(db).windowed is False and len(Session(db).history()) == 200


def test_never_fewer_than_the_last_four_messages(db: Database) -> None:
    fill(Session(db), 20, size=5_000)
    session = Session(db, hydration_byte_budget=10)
    assert [m.id for m in session.history()] == ["m16", "m17", "m18", "m19"]


def test_the_window_slides_as_the_conversation_grows(db: Database) -> None:
    session = Session(db, hydration_byte_budget=4_000)
    for start in range(0, 300, 10):
        session.add_messages([Message.user("y" * 200, id=f"n{i}") for i in range(start, start + 10)])
        assert stored_bytes(session) <= 4_000 * 1.5 + 300
    assert session.windowed and session.history()[-1].id == "n299"
    assert session.count_rows() == 300


def test_the_model_sees_the_window_plus_the_summary_of_what_came_before(db: Database) -> None:
    full = Session(db)
    fill(full, 100)
    full.add_compaction("SUMMARY of m1..m60", "m1", "m60")
    session = Session(db, hydration_byte_budget=3_000)  # the window starts long after m60
    window = session.history()
    assert window[0].id > "m60"
    view = session.model_view()
    assert view[0].text == "SUMMARY of m1..m60" and view[1:] == window
    # A compaction that ends inside the window replaces its start.
    session.add_compaction("SUMMARY up to m95", window[0].id, "m95")
    assert [m.text for m in session.model_view()][:1] == ["SUMMARY up to m95"]
    assert [m.id for m in session.model_view()][1:] == ["m96", "m97", "m98", "m99"]


def test_branching_from_a_message_outside_the_window(db: Database) -> None:
    fill(Session(db), 50)
    session = Session(db, hydration_byte_budget=1_000)
    session.add_messages([Message.user("a new branch", id="b1")], parent_id="m2")
    assert [m.id for m in session.history()] == ["m0", "m1", "m2", "b1"]
    assert [m.id for m in session.get_branches("m2")] == ["m3", "b1"]


class Tiny(Think):
    hydration_byte_budget = 1_500
    model = ScriptedModel(lambda request: f"saw {len(request.messages)}")

    def get_model(self) -> ScriptedModel:
        return self.model


async def test_an_agent_with_a_huge_transcript_keeps_a_bounded_window(data_dir: Path) -> None:
    async with open_agent(Tiny, "t", data_dir=data_dir) as agent:
        await agent.add_messages([Message.user(f"old {i} " + "z" * 300, id=f"old{i}") for i in range(50)])
    async with open_agent(Tiny, "t", data_dir=data_dir) as agent:
        assert agent.session.windowed and len(agent.messages) < 10
        window = [m.id for m in agent.messages]
        result = await agent.save_messages(["still there?"])
        assert result.status == "completed"
        # The model saw the window and the new message, no more (the reply, with its usage
        # metadata, may push more old messages out of the window after the call).
        seen = agent.model.requests[-1].messages
        assert len(seen) <= len(window) + 1 and len(seen) >= len(window) - 1
        assert agent.session.count_rows() == 52


def test_loading_a_long_history_runs_the_garbage_collector_at_most_once(db: Database) -> None:
    import gc

    fill(Session(db), 3_000, size=20)
    started: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(count)
    try:
        history = Session(db).history()  # ~30,000 objects: unpaused, the collector runs dozens of times
    finally:
        gc.callbacks.remove(count)
    assert len(history) == 3_000 and len(started) <= 1, started  # once, after: not over and over
    assert gc.isenabled()
