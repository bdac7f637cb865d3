"""Retained agent-tool runs: kept in the parent's SQLite, replayed in order, pruned, cleared."""

from __future__ import annotations

from pathlib import Path

from tests.subagents.agents import Lead
from think import open_agent
from think.storage import Database, migrate
from think.stream.fanout import AgentToolEvent
from think.subagents.runs import FLUSH_CHUNKS, MAX_STORED_CHUNK_BYTES, MIGRATIONS, AgentToolRuns


def runs(tmp_path: Path, **options: int) -> AgentToolRuns:
    db = Database(tmp_path / "parent.db")
    migrate(db, MIGRATIONS)
    return AgentToolRuns(db, **options)


def event(run: str, sequence: int, kind: str, **fields: object) -> AgentToolEvent:
    return AgentToolEvent(sequence, {"kind": kind, "runId": run, **fields}, parent_tool_call_id=f"call-{run}")


def test_chunks_wait_in_memory_and_lifecycle_events_write_at_once(tmp_path: Path) -> None:
    kept = runs(tmp_path)
    kept.keep(event("r1", 0, "started", agentType="researcher"))
    for n in range(1, 4):
        kept.keep(event("r1", n, "chunk", body=f'{{"n":{n}}}'))
    assert kept.db.value("SELECT count(*) FROM think_agent_tool_events") == 1  # the chunks wait
    frames = list(kept.frames())  # a replay writes what waits first
    assert [f["sequence"] for f in frames] == [0, 1, 2, 3]
    assert frames[0] == {"type": "agent-tool-event", "sequence": 0, "replay": True, "parentToolCallId": "call-r1",
                         "event": {"kind": "started", "runId": "r1", "agentType": "researcher"}}
    for n in range(4, 4 + FLUSH_CHUNKS):
        kept.keep(event("r1", n, "chunk", body="{}"))
    assert kept.db.value("SELECT count(*) FROM think_agent_tool_events") == 4 + FLUSH_CHUNKS


def test_runs_replay_in_the_order_they_started_and_old_ones_go(tmp_path: Path) -> None:
    kept = runs(tmp_path, keep_runs=2)
    kept.keep(event("a", 0, "started"))
    kept.keep(event("b", 0, "started"))
    kept.keep(event("a", 1, "finished", summary="A"))
    kept.keep(event("b", 1, "chunk", body="{}"))
    kept.keep(event("b", 2, "error", error="no"))
    assert [(f["event"]["runId"], f["sequence"]) for f in kept.frames()] == [("a", 0), ("a", 1), ("b", 0), ("b", 1),
                                                                             ("b", 2)]
    kept.keep(event("c", 0, "started"))
    kept.keep(event("c", 1, "aborted"))
    assert {f["event"]["runId"] for f in kept.frames()} == {"b", "c"}  # the newest two runs


def test_a_huge_chunk_is_sent_live_but_not_kept(tmp_path: Path) -> None:
    kept = runs(tmp_path)
    kept.keep(event("r", 0, "started"))
    kept.keep(event("r", 1, "chunk", body="x" * MAX_STORED_CHUNK_BYTES))
    kept.keep(event("r", 2, "finished"))
    assert [f["sequence"] for f in kept.frames()] == [0, 2]


async def test_a_parent_keeps_its_runs_across_a_restart_and_a_clear_forgets_them(data_dir: Path) -> None:
    async with open_agent(Lead, "kept", data_dir=data_dir) as parent:
        await parent.save_messages(["reefs"])
        kinds = [f["event"]["kind"] for f in parent.agent_tool_runs.frames()]
        assert kinds[0] == "started" and kinds[-1] == "finished" and "chunk" in kinds
    async with open_agent(Lead, "kept", data_dir=data_dir) as parent:
        frames = list(parent.agent_tool_runs.frames())
        assert [f["sequence"] for f in frames] == list(range(len(frames)))
        assert frames[0]["parentToolCallId"] == parent.messages[-1].tool_parts[0].tool_call_id
        await parent.clear_messages()
        assert list(parent.agent_tool_runs.frames()) == []
