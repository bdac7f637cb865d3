"""A standalone `ThinkHarness` in a process of its own, for the kill test of a session's stream.

    python -m tests.harness.session_process DATA_DIR run      # a turn in session "work"; blocks in its tool
    python -m tests.harness.session_process DATA_DIR inspect  # prints the session's `in_flight()`
    python -m tests.harness.session_process DATA_DIR delete   # deletes it; prints the stream rows left

The turn says `Working on it.` and calls `long_task` (the one of `harness_process`), which logs
`tool` to DATA_DIR/calls.txt and blocks until the process is killed.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import anyio
import orjson

from tests.harness.harness_process import long_task
from think.harness import ThinkHarness
from think.testing.models import ScriptedModel, call, text

DATA = Path(sys.argv[1])


async def main(mode: str) -> None:
    model = ScriptedModel([[text("Working on it."), call("long_task", id="call-long")]])
    async with ThinkHarness(model=model, tools=[long_task], data_dir=DATA / "db") as harness:
        work = harness.session("work")
        if mode == "run":
            await work.prompt("start the long task")
        if mode == "delete":
            harness.agent.sessions.delete("work")
            db = harness.agent.db
            print(orjson.dumps({"streams": db.value("SELECT count(*) FROM think_session_streams"),
                                "chunks": db.value("SELECT count(*) FROM think_session_stream_chunks")}).decode())
            return
        flight = work.in_flight()
        print(orjson.dumps({"work": asdict(flight) if flight is not None else None,
                            "root": harness.session().in_flight() is not None,
                            "messages": [f"{m.role}: {m.text}" for m in work.messages()]}).decode(), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[2])
