"""SIGKILL real servers mid-turn again and again; after each restart the work finishes exactly once.

Four lanes run side by side (see `crash_lanes`), each a real server process over its own data
directory: chat turns under uvicorn (killed at chunks spread over the whole turn, and inside
writes of the chunk buffer), the instance `default` under a real `think serve` (killed mid-answer,
then again in the recovery's backoff after the client ACKed the replay), durable submissions with
a `rerun` tool, and turns waiting for a client tool declared in `get_tools()`. The loop counts
kills, lost messages, incomplete or repeated answers, client transcripts that differ from the
server's, and tool executions from the tools' own log (a call completed twice, or a reported
call started twice, is a duplicate), and prints the figures.

`THINK_CRASH_ROUNDS` sets the rounds of the chat lane (default 10; the other lanes run half as
many, the `default` lane killing twice a round); `THINK_CRASH_SEED` the seed of the kill points.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import anyio

from tests.recovery.crash_lanes import ChatLane, ClientToolLane, DefaultLane, Lane, SubmissionLane, tool_log

ROUNDS = int(os.environ.get("THINK_CRASH_ROUNDS", "10"))
SEED = int(os.environ.get("THINK_CRASH_SEED", "7"))


def _tool_runs(lanes: list[Lane], counts: Counter[str]) -> None:
    for lane in lanes:
        starts: Counter[str] = Counter()
        ends: Counter[str] = Counter()
        names: dict[str, str] = {}
        for event, call_id, name in tool_log(lane.tools):
            if event in ("start", "end"):
                (starts if event == "start" else ends)[call_id] += 1
            names[call_id] = name
        counts["tool executions"] += sum(ends.values())
        counts["tool calls rerun after a crash"] += sum(1 for c, n in starts.items() if n > 1 and names[c] == "fetch")
        counts["duplicate tool executions"] += sum(n - 1 for n in ends.values() if n > 1)
        counts["duplicate tool executions"] += sum(n - 1 for c, n in starts.items() if n > 1 and names[c] == "record")


async def test_sigkill_mid_turn_loses_nothing_and_finishes_each_turn_once(tmp_path: Path) -> None:
    counts = Counter[str]()
    failures: list[str] = []
    half = max(1, ROUNDS // 2)
    lanes: list[Lane] = [ChatLane(tmp_path, ROUNDS, counts, failures, SEED),
                         DefaultLane(tmp_path, half, counts, failures, SEED + 1),
                         SubmissionLane(tmp_path, half, counts, failures, SEED + 2),
                         ClientToolLane(tmp_path, half, counts, failures, SEED + 3)]
    began = time.monotonic()
    async with anyio.create_task_group() as lanes_running:
        for lane in lanes:
            lanes_running.start_soon(lane.run)
    _tool_runs(lanes, counts)
    figures = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    print(f"\ncrash loop ({time.monotonic() - began:.0f} s): {figures}")
    assert counts["kills"] >= 30 or ROUNDS < 10, counts
    assert counts["answers checked"] == ROUNDS + 3 * half, failures
    problems = ["messages lost", "incomplete answers", "answers not exactly once", "client transcript differs",
                "duplicate tool executions", "flush kills missed", "tool kills missed", "backoff kills missed",
                "rerun tools not rerun", "reported tools not reported", "client tools not parked",
                "client answers lost"]
    assert {p: counts[p] for p in problems if counts[p]} == {}, failures
