"""Full-text search over stored messages: one session, every session, ranking and snippets."""

from __future__ import annotations

from pathlib import Path

import pytest

from think import Message
from think.sessions import MIGRATIONS, Session, Sessions
from think.storage import Database, migrate
from think.stream.fanout import Fanout


@pytest.fixture
def sessions(tmp_path: Path) -> Sessions:
    db = Database(tmp_path / "search.db")
    migrate(db, MIGRATIONS)
    return Sessions(db, fanout=Fanout())


def say(id: str, text: str, role: str = "user") -> Message:
    return Message.from_json({"id": id, "role": role, "parts": [{"type": "text", "text": text}]})


def test_a_word_from_message_9000_of_10000_is_found(sessions: Sessions) -> None:
    session = sessions.root
    for start in range(0, 10_000, 500):
        session.add_messages([say(f"m{i}", f"message number {i} about the weather and the sea")
                              for i in range(start, start + 500)])
    session.add_messages([say("m9000", "the quartermaster counted the barrels")], mode="upsert")
    hits = session.search("quartermaster")
    assert [h.id for h in hits] == ["m9000"]
    assert hits[0].snippet == "the **quartermaster** counted the barrels"
    assert hits[0].content == "the quartermaster counted the barrels"
    assert len(session.search("weather", limit=7)) == 7


def test_results_are_ranked_stemmed_and_every_word_must_match(sessions: Sessions) -> None:
    session = sessions.root
    session.add_messages([
        say("a", "Running a marathon takes months of training."),
        say("b", "I ran. Running, running, running: the runner runs.", "assistant"),
        say("c", "Swimming is calmer."),
    ])
    assert [h.id for h in session.search("run")] == ["b", "a"]  # porter stemming; more matches rank first
    assert [h.id for h in session.search("running marathon")] == ["a"]  # all words
    assert session.search("cycling") == []
    assert session.search("   ") == []
    assert [h.role for h in session.search("runner")] == ["assistant"]


def test_query_syntax_in_user_text_is_just_words(sessions: Sessions) -> None:
    session = sessions.root
    session.add_messages([say("a", 'she said "NOT now" (maybe*) AND left: col:umn')])
    for query in ['"NOT now"', "maybe*", "NOT", "AND left", "col:umn", '"', "(", "now OR never"]:
        hits = session.search(query)  # never an FTS5 syntax error
        assert [h.id for h in hits] in (["a"], []), query
    assert [h.id for h in session.search("now OR never")] == []  # OR is a word here, and "never" is absent


def test_edits_and_deletes_keep_the_index_exact(sessions: Sessions) -> None:
    session = sessions.root
    session.add_messages([say(f"m{i}", f"filler {i}") for i in range(40)])  # past one indexing batch
    session.add_messages([say("m3", "now about pelicans")], mode="upsert")
    assert [h.id for h in session.search("pelicans")] == ["m3"]
    assert session.search("filler 3") == []
    session.add_messages([say("m3", "now about herons")], mode="upsert")
    assert session.search("pelicans") == [] and [h.id for h in session.search("herons")] == ["m3"]
    session.clear()
    assert session.search("herons") == [] and session.search("filler") == []
    session.add_messages([say("n1", "filler again")])
    assert [h.id for h in session.search("filler")] == ["n1"]
    session.db.sql("INSERT INTO think_messages_fts (think_messages_fts) VALUES ('integrity-check')")  # raises if broken


def test_search_across_sessions_names_the_session(sessions: Sessions) -> None:
    work = sessions.create("work")
    home = sessions.create("home")
    work.add_messages([say("w1", "the quarterly report is late")])
    home.add_messages([say("h1", "the report card came home")])
    assert {h.session_id for h in sessions.search("report")} == {work.id, home.id}
    assert [h.id for h in work.search("report")] == ["w1"]
    assert [h.id for h in Session(sessions.db, home.id).search("report")] == ["h1"]


@pytest.mark.parametrize("across", [False, True])
def test_a_query_matching_more_than_can_be_ranked_is_ranked_among_its_newest_matches(
        sessions: Sessions, monkeypatch: pytest.MonkeyPatch, across: bool) -> None:
    from think.sessions import search

    monkeypatch.setattr(search, "RANKED_CANDIDATES", 5)
    session = sessions.root
    other = sessions.create("other")
    session.add_messages([say("best", "harbour harbour harbour")])  # the best match, and the oldest
    for i in range(8):
        session.add_messages([say(f"s{i}", f"the harbour was calm on day {i} while the gulls circled overhead")])
        other.add_messages([say(f"o{i}", f"the harbour on day {i}")])
    found = {h.id for h in (search.search_messages(sessions.db, "harbour", session_id=None, limit=10) if across
                            else session.search("harbour", limit=10))}
    newest = {"s3", "s4", "s5", "s6", "s7"} if not across else {"o5", "s6", "o6", "s7", "o7"}
    assert found == newest  # five matches ranked, the newest five (of this session, or of all)
    monkeypatch.setattr(search, "RANKED_CANDIDATES", 100)
    assert session.search("harbour", limit=1)[0].id == "best"  # all matches ranked: the best one wins
