"""`DataDirReader` over a data directory that real turns wrote."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.browse.agents import LONG_NAME, Notes
from think import open_agent
from think.browse import BrowseError, agents_browser
from think.runtime import ownership

Filled = tuple[Path, dict[str, list[str]]]


def test_agents_and_instances_are_listed_with_titles_activity_and_counts(filled: Filled) -> None:
    data_dir, _ = filled
    browser = agents_browser(data_dir)
    assert [(a.agent, a.instances) for a in browser.agents()] == [("counter", 1), ("notes", 3)]
    notes = {i.name: i for i in browser.instances("notes")}
    assert notes["alice"].title == "Plan the offsite"  # the first line of the first user message
    assert notes["alice"].messages == 4
    assert notes["bob"].title == "Name a cat"
    assert notes["bob"].messages == 2  # the active branch, not all three answers
    [counter] = browser.instances("counter")
    assert (counter.name, counter.title, counter.messages, counter.error) == ("c1", None, 0, None)
    assert all(i.last_activity is not None for i in notes.values())
    # Most recently active first.
    stamps = [i.last_activity or 0 for i in browser.instances("notes")]
    assert stamps == sorted(stamps, reverse=True)


def test_a_name_too_long_for_a_file_name_is_listed_by_its_file_stem_and_readable(filled: Filled) -> None:
    data_dir, _ = filled
    browser = agents_browser(data_dir)
    [long] = [i for i in browser.instances("notes") if i.name.startswith("a-long-name-")]
    assert long.name != LONG_NAME and long.title == "Long one" and not long.addressable
    assert all(i.addressable for i in browser.instances("notes") if i.name != long.name)
    assert [m.role for m in browser.transcript("notes", long.name).messages] == ["user", "assistant"]
    assert [m.role for m in browser.transcript("notes", LONG_NAME).messages] == ["user", "assistant"]


def test_a_transcript_marks_branches_and_shows_another_on_request(filled: Filled) -> None:
    data_dir, ids = filled
    browser = agents_browser(data_dir)
    active = browser.transcript("notes", "bob")
    assert active.active
    question, answer = active.messages
    assert question.id == ids["question"][0] and question.branches == [question.id]
    assert answer.branches == ids["answers"] and answer.branch == 2  # the newest answer is active
    assert [p["text"] for p in answer.message["parts"] if p["type"] == "text"] == ["Noted: Name a cat"]
    other = browser.transcript("notes", "bob", branch=ids["answers"][0])
    assert not other.active
    assert [m.id for m in other.messages] == [question.id, ids["answers"][0]]
    # Through the question: its active continuation.
    assert [m.id for m in browser.transcript("notes", "bob", branch=question.id).messages] == \
        [question.id, ids["answers"][2]]


def test_unknown_things_are_one_clear_error(filled: Filled, tmp_path: Path) -> None:
    data_dir, _ = filled
    browser = agents_browser(data_dir)
    with pytest.raises(BrowseError, match=r"no agent 'nobody' in .* \(agents there: counter, notes\)"):
        browser.instances("nobody")
    with pytest.raises(BrowseError, match="agent 'notes' has no instance 'zed'"):
        browser.transcript("notes", "zed")
    with pytest.raises(BrowseError, match="has no message 'nope'"):
        browser.transcript("notes", "bob", branch="nope")
    with pytest.raises(BrowseError, match=r"no agent '\.\./notes'"):
        browser.instances("../notes")
    with pytest.raises(BrowseError, match="does not exist"):
        agents_browser(tmp_path / "missing").agents()


def test_reading_neither_wakes_nor_locks_an_agent_and_writes_nothing(filled: Filled) -> None:
    data_dir, _ = filled
    before = {p: p.stat().st_mtime_ns for p in data_dir.rglob("*.db")}
    browser = agents_browser(data_dir)
    browser.agents()
    for agent in ("notes", "counter"):
        for instance in browser.instances(agent):
            browser.transcript(agent, instance.name)
    assert not ownership.holds(data_dir)  # the data directory's lock was never taken
    assert {p: p.stat().st_mtime_ns for p in data_dir.rglob("*.db")} == before

    async def open_while_read() -> None:  # and the owner can open the agent as usual afterwards
        async with open_agent(Notes, "alice", data_dir=data_dir) as agent:
            assert len(agent.messages) == 4

    anyio.run(open_while_read)


def test_a_file_that_is_not_a_database_is_listed_with_its_error(filled: Filled) -> None:
    data_dir, _ = filled
    (data_dir / "notes" / "broken.db").write_bytes(b"not a database at all" * 100)
    broken = agents_browser(data_dir).instance("notes", "broken")
    assert broken.error is not None and "broken.db" in broken.error
    assert len(agents_browser(data_dir).instances("notes")) == 4
