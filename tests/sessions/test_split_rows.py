"""Messages larger than a row: split across continuation rows, joined back on every read, never
cut (`think.sessions.rows`). Through the public API: agents, sessions, search, branches; a real
subprocess killed in the middle of writing one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from think import Message, Think, open_agent, tool
from think.browse import agents_browser
from think.sessions import MIGRATIONS, Session, Sessions
from think.sessions.rows import ROW_BYTES
from think.sessions.session import NEW_ROOT
from think.storage import Database, migrate
from think.stream.fanout import Fanout
from think.testing.models import ScriptedModel, call

FIVE_MB = "".join(f"line {i:07d} of a long tool output, ünïcödé ✓\n" for i in range(110_000))
assert len(FIVE_MB.encode()) > 5_000_000


@tool
def dump_log() -> str:
    """Return the whole build log."""
    return FIVE_MB


class Logs(Think):
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return ScriptedModel([[call("dump_log")], "The log is long."])

    def get_tools(self) -> list[Any]:
        return [dump_log]


async def test_a_5_mb_tool_output_survives_a_restart_byte_for_byte(tmp_path: Path) -> None:
    async with open_agent(Logs, "logs", data_dir=tmp_path) as agent:
        result = await agent.save_messages("show me the log")
        assert result.status == "completed"
        stored = agent.db.one("SELECT seq, length(body) AS size, chunks FROM think_messages "
                              "WHERE role = 'assistant'")
        assert stored is not None and stored["size"] <= ROW_BYTES and stored["chunks"] >= 3
        written = agent.messages[-1].dumps()
    async with open_agent(Logs, "logs", data_dir=tmp_path) as agent:  # a new process would see this
        answer = agent.messages[-1]
        assert answer.tool_parts[0].output == FIVE_MB
        assert answer.dumps() == written
        assert agent.session.history_json()[-1] == written
        assert agent.session.get_message(answer.id) == answer


@pytest.fixture
def sessions(tmp_path: Path) -> Sessions:
    db = Database(tmp_path / "split.db")
    migrate(db, MIGRATIONS)
    return Sessions(db, fanout=Fanout())


def say(id: str, text: str, role: str = "user") -> Message:
    return Message.from_json({"id": id, "role": role, "parts": [{"type": "text", "text": text}]})


def big_text(tail: str, size: int = 4_000_000) -> str:
    return "padding words " * (size // 14) + tail


def test_search_finds_a_word_in_a_later_slice_and_follows_edits_and_deletes(sessions: Sessions) -> None:
    session = sessions.root
    session.add_messages([say("u1", big_text("the zanzibar manifest")), say("a1", "noted", "assistant")])
    assert session.db.value("SELECT chunks FROM think_messages WHERE id = 'u1'") >= 2
    assert [hit.id for hit in session.search("zanzibar")] == ["u1"]
    session.save([say("u1", big_text("the mombasa manifest", 5_000_000))])  # still split, now indexed
    assert session.search("zanzibar") == []
    assert [hit.id for hit in session.search("mombasa")] == ["u1"]
    session.save([say("u1", "short now: kilimanjaro")])  # no longer split
    assert session.db.value("SELECT count(*) FROM think_message_chunks") == 0
    assert session.search("mombasa") == []
    assert [hit.id for hit in session.search("kilimanjaro")] == ["u1"]
    session.save([say("u1", big_text("back to lamu"))])
    assert [hit.id for hit in session.search("lamu")] == ["u1"]
    session.clear()  # the delete trigger reads the whole body, then drops the slices
    assert session.search("lamu") == []
    assert session.db.value("SELECT count(*) FROM think_message_chunks") == 0


def test_branches_and_edits_of_split_messages(sessions: Sessions) -> None:
    session = sessions.root
    question = big_text("which harbour?")
    first, second = big_text("answer one", 3_000_000), big_text("answer two", 2_500_000)
    session.add_messages([say("u1", question), say("a1", first, "assistant")])
    session.add_messages([say("a2", second, "assistant")], parent_id="u1")  # regenerated: a branch
    assert [m.text for m in session.get_branches("u1")] == [first, second]
    session.checkout("a1")
    assert [m.text for m in session.history()] == [question, first]
    edited = big_text("which harbour, exactly?", 6_000_000)
    session.add_messages([say("u1b", edited)], parent_id=NEW_ROOT)  # the first question, edited
    reopened = Session(session.db)
    assert [m.text for m in reopened.history()] == [edited]
    reopened.switch_branch("a2")
    assert [m.text for m in reopened.history()] == [question, second]
    assert Session(session.db).get_message("u1b") == say("u1b", edited)


CHILD = textwrap.dedent("""
    import os, sys
    from think.messages import Message
    from think.sessions import MIGRATIONS, Session
    from think.storage import Database, migrate

    db = Database(sys.argv[1])
    migrate(db, MIGRATIONS)
    session = Session(db)
    session.add_messages([Message.user("before", id="u0")])
    stop_at = sys.argv[2]

    def trace(statement):
        if stop_at == "slices" and "think_message_chunks" in statement and statement.startswith("INSERT"):
            print("mid-write", flush=True)
            sys.stdin.readline()  # hold the transaction open until the parent kills us
    db.connection.set_trace_callback(trace)
    output = "".join(f"row {i:07d} of output\\n" for i in range(400_000))
    session.add_messages([Message.from_json({"id": "big", "role": "assistant", "parts": [
        {"type": "tool-dump", "toolCallId": "c1", "state": "output-available", "input": {}, "output": output}]})])
    print("committed", flush=True)
    sys.stdin.readline()
""")


@pytest.mark.parametrize("stop_at", ["slices", "after"])
def test_a_kill_while_a_split_message_is_written_leaves_all_of_it_or_none(tmp_path: Path, stop_at: str) -> None:
    path = tmp_path / "kill.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), stop_at], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    assert line == ("mid-write" if stop_at == "slices" else "committed")
    child.send_signal(signal.SIGKILL)
    child.wait()
    db = Database(path)
    migrate(db, MIGRATIONS)
    session = Session(db)
    ids = [m.id for m in session.history()]
    if stop_at == "slices":
        assert ids == ["u0"]
        assert db.value("SELECT count(*) FROM think_message_chunks") == 0
    else:
        assert ids == ["u0", "big"]
        output = session.history()[-1].tool_parts[0].output
        assert output == "".join(f"row {i:07d} of output\n" for i in range(400_000))


def test_the_hydration_budget_charges_a_split_message_its_whole_size(tmp_path: Path) -> None:
    db = Database(tmp_path / "budget.db")
    migrate(db, MIGRATIONS)
    Session(db).add_messages([say(f"m{i}", big_text(f"message {i}", 2_500_000)) for i in range(10)])
    assert db.value("SELECT min(chunks) FROM think_messages") == 1  # each row holds 1.8 MB of 2.5
    session = Session(db, hydration_byte_budget=12_000_000)
    # 2.5 MB each: the fifth message crosses the budget and is the last one in (charging only the
    # 1.8 MB a row holds would have let seven in).
    assert [m.id for m in session.history()] == ["m5", "m6", "m7", "m8", "m9"]
    assert session.windowed and session.get_message("m0") == say("m0", big_text("message 0", 2_500_000))


async def test_the_transcript_browser_shows_a_split_message_whole(tmp_path: Path) -> None:
    async with open_agent(Logs, "logs", data_dir=tmp_path) as agent:
        await agent.save_messages(big_text("Read the build log", 3_000_000))
    transcript = agents_browser(tmp_path).transcript("logs", "logs")
    question, answer = transcript.messages[0].message, transcript.messages[1].message
    assert question["parts"][0]["text"] == big_text("Read the build log", 3_000_000)
    assert [p["output"] for p in answer["parts"] if p["type"] == "tool-dump_log"] == [FIVE_MB]
    title = agents_browser(tmp_path).instance("logs", "logs").title
    assert title is not None and title.startswith("padding words padding words")
