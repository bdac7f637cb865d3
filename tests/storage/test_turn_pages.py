"""A turn's commits write few pages to the log, and the tables rebuilt for that keep their rows.

Streams and recovery fibers are WITHOUT ROWID tables keyed by their request id, and the usage
ledger's `seq` has no AUTOINCREMENT: a stream's, a fiber's and a usage row's writes then change
one b-tree each, and no usage row rewrites the sqlite_sequence page. Existing databases get there
through rebuild migrations.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import sys
import time
from pathlib import Path

import anyio

from think import EmbeddedRuntime, Think, tool
from think.storage import Database, migrate
from think.testing.models import ScriptedModel, call

ROOT = Path(__file__).resolve().parents[2]
REBUILDS = ("think.stream.003_keyed_streams", "think.recovery.002_keyed_fibers", "think.usage.002_plain_seq")


@tool
def lookup(city: str) -> dict[str, object]:
    """Look up the weather in a city."""
    return {"city": city, "temperature": 21}


def reply(request: object) -> object:
    if request.messages[-1].role == "tool":  # type: ignore[attr-defined]
        return "It is 21 degrees in Lisbon."
    return [call("lookup", city="Lisbon")]


class Weather(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(reply)

    def get_tools(self) -> list[object]:
        return [lookup]


def logged_pages(wal: Path, start: int) -> list[list[int]]:
    """The page numbers of each commit appended to the write-ahead log `wal` after byte `start`."""
    data = wal.read_bytes()
    page_size = struct.unpack(">I", data[8:12])[0]
    commits: list[list[int]] = []
    pages: list[int] = []
    offset = max(start, 32)
    while offset + 24 + page_size <= len(data):
        page, size_after = struct.unpack(">II", data[offset:offset + 8])
        pages.append(page)
        if size_after:  # a commit's last frame
            commits.append(pages)
            pages = []
        offset += 24 + page_size
    return commits


async def test_a_one_tool_turn_writes_one_btree_page_per_stream_fiber_and_usage_row(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Weather, "pages")
    for _ in range(3):
        await agent.save_messages(["Weather in Lisbon?"])
    agent.db.sql("PRAGMA wal_autocheckpoint = 0")
    agent.db.sql("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = Path(f"{agent.db.path}-wal")
    start = os.path.getsize(wal)  # noqa: ASYNC240 - nothing else runs on the loop meanwhile
    result = await agent.save_messages(["Weather in Lisbon?"])
    assert result.status == "completed"
    names = {row["pageno"]: row["name"] for row in agent.db.sql("SELECT name, pageno FROM dbstat")}
    commits = [[names[page] for page in pages] for pages in logged_pages(wal, start)]
    await runtime.close()
    written = [name for pages in commits for name in pages]
    # No second b-tree behind these tables any more, and no sqlite_sequence row for usage.
    assert not {name for name in written if name.startswith(("sqlite_autoindex_think_streams",
                                                              "sqlite_autoindex_think_chat_fibers"))}
    usage_commits = [pages for pages in commits if "think_usage" in pages]
    assert len(usage_commits) == 2 and all("sqlite_sequence" not in pages for pages in usage_commits)
    # 8 commits (the question, the stream's start, three flushes, two usage rows, the reply): 33
    # pages on this conversation's fourth turn before the rebuilds, 28 after.
    assert len(commits) == 8
    assert len(written) <= 28


def _insert_old_rows(path: Path, *, fiber: bool = True) -> None:
    now = time.time()  # recent: the retention sweep as an agent starts keeps them
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("INSERT INTO think_streams (request_id, status, continuation, message_id, created_at) "
                 "VALUES ('r1', 'orphaned', 0, 'm1', ?)", (now,))
    for first, body in ((0, '{"type":"start"}\n{"type":"start-step"}'), (2, '{"type":"text-delta"}')):
        conn.execute("INSERT INTO think_stream_chunks (request_id, first_seq, body, created_at) VALUES ('r1', ?, ?, ?)",
                     (first, body, now))
    if fiber:
        conn.execute("INSERT INTO think_chat_fibers (request_id, root_request_id, session_id, continuation, attempt, "
                     "latest_user_id, last_body, client_tools, stash, incident_at, progress_at, work, counted, "
                     "created_at) VALUES ('r1', 'r1', '', 0, 2, 'u1', '{\"id\":\"u1\"}', '[]', '{\"k\":1}', 1.0, 2.0, "
                     "3, 1, 1.0)")
    for step in (0, 1):
        conn.execute("INSERT INTO think_usage (at, request_id, session_id, message_id, step, model, input, output) "
                     "VALUES (1.0, 'r1', '', 'm1', ?, 'scripted', 10, 5)", (step,))
    conn.close()


def test_an_existing_database_keeps_its_streams_fibers_and_usage_through_the_rebuilds(tmp_path: Path) -> None:
    everything = Think.all_migrations()
    path = tmp_path / "old.db"
    db = Database(path)
    migrate(db, [m for m in everything if m.name not in REBUILDS])  # a database from before them
    db.close()
    _insert_old_rows(path)
    db = Database(path)
    assert migrate(db, everything) == list(REBUILDS)
    assert [(r["request_id"], r["status"], r["message_id"]) for r in db.sql("SELECT * FROM think_streams")] == [
        ("r1", "orphaned", "m1")]
    chunks = db.sql("SELECT first_seq, body FROM think_stream_chunks WHERE request_id = 'r1' ORDER BY first_seq")
    assert [(r["first_seq"], r["body"]) for r in chunks] == [(0, '{"type":"start"}\n{"type":"start-step"}'),
                                                             (2, '{"type":"text-delta"}')]
    fiber = db.one("SELECT * FROM think_chat_fibers WHERE request_id = 'r1'")
    assert fiber is not None and (fiber["attempt"], fiber["stash"], fiber["work"], fiber["counted"]) == (
        2, '{"k":1}', 3, 1)
    assert [r["seq"] for r in db.sql("SELECT seq FROM think_usage ORDER BY seq")] == [1, 2]
    db.sql("INSERT INTO think_usage (at, request_id, session_id, message_id, step, model) "
           "VALUES (2.0, 'r2', '', 'm2', 0, 'scripted')")
    assert db.value("SELECT max(seq) FROM think_usage") == 3  # numbering goes on after the kept rows
    assert db.value("SELECT count(*) FROM sqlite_sequence WHERE name = 'think_usage'") == 0
    assert db.value("PRAGMA integrity_check") == "ok"
    db.close()


async def test_an_upgraded_agent_replays_its_old_stream_and_goes_on_with_its_turns(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path / "data", idle_timeout=None)
    path = runtime.path_for(Weather, "old")
    path.parent.mkdir(parents=True)
    db = Database(path)
    migrate(db, [m for m in Weather.all_migrations() if m.name not in REBUILDS])
    db.close()
    _insert_old_rows(path, fiber=False)
    agent = await runtime.get(Weather, "old")
    assert set(REBUILDS) <= {r["name"] for r in agent.db.sql("SELECT name FROM _think_migrations")}
    assert agent.streams.chunks("r1") == [(0, '{"type":"start"}'), (1, '{"type":"start-step"}'),
                                          (2, '{"type":"text-delta"}')]
    result = await agent.save_messages(["Weather in Lisbon?"])
    assert result.status == "completed" and result.message is not None
    assert agent.usage().calls == 4  # the two old rows and the turn's two model calls
    await runtime.close()


async def test_a_kill_in_the_middle_of_the_rebuilds_leaves_the_old_tables_and_their_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = Database(path)
    migrate(db, [m for m in Think.all_migrations() if m.name not in REBUILDS])
    db.close()
    _insert_old_rows(path)
    process = await anyio.run_process([sys.executable, "-m", "tests.storage.rebuild_kill", str(path)], cwd=ROOT,
                                      check=False)
    assert process.returncode == -9, process.stderr  # killed after the rebuilds ran, before their commit
    db = Database(path)
    assert db.value("SELECT count(*) FROM _think_migrations WHERE name IN (?, ?, ?)", *REBUILDS) == 0
    assert "WITHOUT ROWID" not in db.value("SELECT sql FROM sqlite_master WHERE name = 'think_chat_fibers'")
    assert db.value("SELECT count(*) FROM think_chat_fibers") == 1 and db.value("SELECT count(*) FROM think_usage") == 2
    assert migrate(db, Think.all_migrations()) == list(REBUILDS)  # the next start runs them again, whole
    assert db.one("SELECT attempt FROM think_chat_fibers WHERE request_id = 'r1'")["attempt"] == 2  # type: ignore[index]
    assert [r["seq"] for r in db.sql("SELECT seq FROM think_usage ORDER BY seq")] == [1, 2]
    assert db.value("PRAGMA integrity_check") == "ok"
    db.close()
