"""Reading a session's active path: ordered by the parent links, with no sort in SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from think import Message
from think.errors import StorageError
from think.sessions import MIGRATIONS, Session
from think.sessions.rows import ROW_BYTES
from think.sessions.window import PATH_SQL, read_path_rows
from think.storage import Database, migrate


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(tmp_path / "p.db")
    migrate(database, MIGRATIONS)
    return database


def test_the_path_is_read_without_sorting_bodies_in_sqlite(db: Database) -> None:
    plan = " | ".join(str(row["detail"]) for row in db.sql("EXPLAIN QUERY PLAN " + PATH_SQL, 1, 10**9, 3))
    assert "TEMP B-TREE" not in plan, plan  # an ORDER BY here moved every body through a sorter


def test_the_order_comes_from_the_links_not_from_the_row_numbers(db: Database) -> None:
    session = Session(db)
    session.add_messages([Message.user(f"m{i}", id=f"m{i}") for i in range(3)])
    # An oldest message stored after the others (as a re-parented row would be): its seq is the
    # largest, and the path must still start with it.
    db.sql("INSERT INTO think_messages (session_id, id, parent, role, body, chunks, created_at) "
           "VALUES ('', 'first', NULL, 'user', ?, 0, 0)", Message.user("first", id="first").dumps())
    first = db.value("SELECT seq FROM think_messages WHERE id = 'first'")
    db.sql("UPDATE think_messages SET parent = ? WHERE id = 'm0'", first)
    assert [m.id for m in Session(db).history()] == ["first", "m0", "m1", "m2"]


def test_a_branch_reads_only_its_own_path_and_split_bodies_come_back_whole(db: Database) -> None:
    session = Session(db)
    big = "x" * (ROW_BYTES + 1_000)  # stored in two slices
    session.add_messages([Message.user("root", id="root"), Message.user(big, id="big"),
                          Message.user("old tip", id="old")])
    session.checkout("big")
    session.add_messages([Message.user("new tip", id="new")])
    reopened = Session(db)
    assert [m.id for m in reopened.history()] == ["root", "big", "new"]
    assert reopened.history()[1].text == big
    leaf = db.value("SELECT seq FROM think_messages WHERE id = 'new'")
    rows = read_path_rows(db, int(leaf), 10**9)
    assert [row[2] for row in rows] == ["root", "big", "new"]
    assert rows[0][1] is None and rows[1][1] == rows[0][0]  # (seq, parent, id, body)
    assert Message.from_json(rows[1][3]).text == big
    assert reopened.history_json() == [m.dumps() for m in reopened.history()]


def test_a_stored_message_that_no_longer_validates_is_named_and_nothing_is_changed(db: Database) -> None:
    session = Session(db)
    session.add_messages([Message.user(f"m{i}", id=f"m{i}") for i in range(4)])
    bad = b'{"id":"m2","role":"user","parts":[{"type":"text","text":5}]}'
    db.sql("UPDATE think_messages SET body = ? WHERE id = 'm2'", bad)
    with pytest.raises(StorageError, match=r"(?s)stored message 'm2' is not a valid UIMessage.*parts\.0\.text\.text"):
        Session(db).history()
    assert db.value("SELECT body FROM think_messages WHERE id = 'm2'") == bad
    assert db.value("SELECT count(*) FROM think_messages") == 4
