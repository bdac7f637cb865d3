"""The resumable chunk buffer: batched rows in SQLite, replay in order, restarts, retention."""

from __future__ import annotations

from pathlib import Path

from think.storage import Database, migrate
from think.stream.fanout import ChunkEvent, TurnFailed, TurnFinished, TurnStarted
from think.stream.resumable import (
    CHECK_EVERY,
    FLUSH_AFTER,
    MIGRATIONS,
    RETAIN_ABANDONED,
    RETAIN_FINISHED,
    ROW_CHUNKS,
    ResumableStreams,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def streams_at(path: Path, clock: Clock | None = None) -> ResumableStreams:
    db = Database(path)
    migrate(db, MIGRATIONS)
    clock = clock or Clock()
    return ResumableStreams(db, clock=clock, monotonic=clock)


def delta(request_id: str, seq: int, text: str = "x ") -> ChunkEvent:
    return ChunkEvent(request_id, seq, {"type": "text-delta", "id": "txt-0", "delta": text})


def rows(streams: ResumableStreams) -> list[tuple[int, int]]:
    """(first seq, chunks) of each stored row."""
    return [(r["first_seq"], r["body"].count("\n") + 1)
            for r in streams.db.sql("SELECT first_seq, body FROM think_stream_chunks ORDER BY first_seq")]


async def test_a_fast_stream_costs_a_few_rows_and_the_first_delta_is_written_at_once(tmp_path: Path) -> None:
    streams = streams_at(tmp_path / "a.db")
    await streams.on_event(TurnStarted("r1"))
    await streams.on_event(ChunkEvent("r1", 0, {"type": "start", "messageId": "m1"}))
    await streams.on_event(ChunkEvent("r1", 1, {"type": "start-step"}))
    await streams.on_event(ChunkEvent("r1", 2, {"type": "text-start", "id": "txt-0"}))
    assert rows(streams) == []  # waiting in memory ...
    assert [seq for seq, _ in streams.chunks("r1")] == [0, 1, 2]  # ... and replayable all the same
    await streams.on_event(delta("r1", 3))
    assert rows(streams) == [(0, 4)]  # the first content delta is written at once
    for seq in range(4, 4 + ROW_CHUNKS + 5):
        await streams.on_event(delta("r1", seq))
    assert rows(streams) == [(0, 4), (4, ROW_CHUNKS)]  # a full row (no time passed)
    last = 4 + ROW_CHUNKS + 5
    assert [seq for seq, _ in streams.chunks("r1")] == list(range(last))
    await streams.on_event(ChunkEvent("r1", last, {"type": "finish", "finishReason": "stop"}))
    assert rows(streams)[-1] == (4, ROW_CHUNKS)  # the end waits for the turn's last commit ...
    assert [seq for seq, _ in streams.chunks("r1")] == list(range(last + 1))  # ... replayable meanwhile
    await streams.on_event(TurnFinished("r1", "completed"))
    assert rows(streams)[-1] == (4 + ROW_CHUNKS, 6)
    assert streams.get("r1") is not None and streams.get("r1").status == "completed"  # type: ignore[union-attr]


async def test_tool_outputs_are_written_at_once_and_old_chunks_after_a_while(tmp_path: Path) -> None:
    clock = Clock()
    streams = streams_at(tmp_path / "a.db", clock)
    await streams.on_event(TurnStarted("r1"))
    await streams.on_event(ChunkEvent("r1", 0, {"type": "start"}))
    await streams.on_event(ChunkEvent("r1", 1, {"type": "tool-output-available", "toolCallId": "c", "output": 1}))
    assert rows(streams) == [(0, 2)]
    await streams.on_event(ChunkEvent("r1", 2, {"type": "start-step"}))
    clock.now += FLUSH_AFTER
    await streams.on_event(ChunkEvent("r1", 3, {"type": "text-start", "id": "t"}))
    assert rows(streams) == [(0, 2), (2, 2)]
    await streams.on_event(delta("r1", 4))  # the first delta
    clock.now += FLUSH_AFTER
    for seq in range(5, 5 + CHECK_EVERY - 1):
        await streams.on_event(delta("r1", seq))
    assert len(rows(streams)) == 3  # deltas look at the clock every CHECK_EVERY chunks ...
    await streams.on_event(delta("r1", 5 + CHECK_EVERY - 1))
    assert rows(streams)[-1] == (5, CHECK_EVERY)  # ... and write what waited too long


async def test_the_body_is_encoded_once_for_the_buffer_and_the_sockets(tmp_path: Path) -> None:
    streams = streams_at(tmp_path / "a.db")
    await streams.on_event(TurnStarted("r1"))
    event = ChunkEvent("r1", 0, {"type": "start-step"})
    await streams.on_event(event)
    assert streams.body_of(event) is streams.chunks("r1")[0][1]  # the very string that waits to be written
    assert streams.body_of(delta("r1", 1, "hé")) == '{"type":"text-delta","id":"txt-0","delta":"hé"}'


async def test_a_failed_turn_leaves_a_terminal_record_until_a_later_turn(tmp_path: Path) -> None:
    streams = streams_at(tmp_path / "a.db")
    await streams.on_event(TurnStarted("r1"))
    await streams.on_event(delta("r1", 0))
    await streams.on_event(TurnFailed("r1", "the model failed"))
    await streams.on_event(TurnFinished("r1", "error"))
    assert streams.terminal is not None and (streams.terminal.request_id, streams.terminal.body) == \
        ("r1", "the model failed")
    reopened = streams_at(tmp_path / "a.db")  # kept across restarts
    assert reopened.terminal == streams.terminal
    assert reopened.get("r1") is not None and reopened.get("r1").status == "error"  # type: ignore[union-attr]
    await reopened.on_event(TurnStarted("r2"))
    assert reopened.terminal is None
    await reopened.on_event(TurnFinished("r3", "error", error="failed before it streamed"))
    assert reopened.terminal is not None and reopened.terminal.request_id == "r3"
    await reopened.on_event(TurnFinished("r4", "aborted"))
    assert reopened.terminal is None


async def test_a_stream_left_streaming_is_an_orphan_after_a_restart(tmp_path: Path) -> None:
    clock = Clock()
    streams = streams_at(tmp_path / "a.db", clock)
    await streams.on_event(TurnStarted("r1"))
    for seq in range(13):
        await streams.on_event(delta("r1", seq))
        clock.now += 0.02
    # the process dies: what waited in memory is lost, the rows are not
    restarted = streams_at(tmp_path / "a.db")
    [orphan] = restarted.orphans()
    assert orphan.request_id == "r1" and restarted.orphan == orphan
    assert [seq for seq, _ in restarted.chunks("r1")] == list(range(11))  # 11 and 12 were in memory
    assert restarted.orphans() == [] and restarted.orphan is not None  # still on offer, saved once
    restarted.settle_orphan("r1")
    assert restarted.orphan is None and restarted.get("r1").status == "completed"  # type: ignore[union-attr]


async def test_retention_keeps_finished_streams_ten_minutes_and_abandoned_ones_an_hour(tmp_path: Path) -> None:
    clock = Clock()
    streams = streams_at(tmp_path / "a.db", clock)
    await streams.on_event(TurnStarted("done"))
    await streams.on_event(delta("done", 0))
    await streams.on_event(TurnFinished("done", "completed"))
    await streams.on_event(TurnStarted("abandoned"))
    await streams.on_event(delta("abandoned", 0))
    streams.live = None  # its turn vanished without an end
    clock.now += RETAIN_FINISHED - 1
    assert streams.sweep() == 0 and streams.get("done") is not None
    clock.now += 2
    assert streams.get("done") is None  # expired: ignored at once ...
    assert streams.sweep() == 1  # ... and deleted by the sweep
    assert streams.get("abandoned") is not None
    clock.now += RETAIN_ABANDONED
    assert streams.sweep() == 1
    assert streams.db.value("SELECT count(*) FROM think_stream_chunks") == 0


async def test_clear_forgets_everything(tmp_path: Path) -> None:
    streams = streams_at(tmp_path / "a.db")
    await streams.on_event(TurnStarted("r1"))
    await streams.on_event(delta("r1", 0))
    streams.set_terminal("r0", "boom")
    streams.clear()
    assert streams.live is None and streams.terminal is None and streams.chunks("r1") == []
    await streams.on_event(delta("r1", 1))  # a chunk of the cleared turn is not kept
    assert streams.chunks("r1") == []


async def test_a_stream_end_sealed_in_a_rolled_back_transaction_is_still_written_by_finish(tmp_path: Path) -> None:
    streams = streams_at(tmp_path / "a.db")
    await streams.on_event(TurnStarted("r1"))
    await streams.on_event(ChunkEvent("r1", 0, {"type": "start", "messageId": "m1"}))
    await streams.on_event(ChunkEvent("r1", 1, {"type": "finish", "finishReason": "stop"}))
    try:
        with streams.db.transaction():
            assert streams.sealing("r1", "completed", "m1") is not None
            raise RuntimeError("the reply's statement failed")
    except RuntimeError:
        pass
    assert rows(streams) == [] and streams.get("r1").status == "streaming"  # type: ignore[union-attr]
    assert [seq for seq, _ in streams.chunks("r1")] == [0, 1]  # nothing lost from memory either
    with streams.db.transaction():
        committed = streams.sealing("r1", "completed", "m1")
    assert committed is not None
    committed()
    assert rows(streams) == [(0, 2)] and streams.get("r1").status == "completed"  # type: ignore[union-attr]
    assert streams.sealing("other", "completed", None) is None
    await streams.on_event(TurnFinished("r1", "completed"))
    assert rows(streams) == [(0, 2)] and streams.live is None  # written once
