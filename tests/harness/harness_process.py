"""A standalone `ThinkHarness` in a process of its own, for the kill test.

    python -m tests.harness.harness_process DATA_DIR submit   # submits `plan`, prints the ack, blocks
    python -m tests.harness.harness_process DATA_DIR wait     # waits for the operation, prints it

`plan` calls `long_task`, which blocks until the process is killed on the first run (it logs
`tool` to DATA_DIR/calls.txt); after the restart the cut-off call is reported interrupted and the
answer is `Plan done after an interruption.`
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import anyio
import orjson

from think import tool
from think.harness import ThinkHarness
from think.models.base import ModelRequest, ToolMessage
from think.testing.models import Reply, ScriptedModel, call

DATA = Path(sys.argv[1])


def script(request: ModelRequest) -> Reply:
    if isinstance(request.messages[-1], ToolMessage):
        return "Plan done after an interruption."
    return call("long_task")


@tool
async def long_task() -> str:
    """Work that blocks until the process is killed."""
    with (DATA / "calls.txt").open("a") as out:
        out.write("tool\n")
    await anyio.sleep_forever()
    return "never"


async def main(mode: str) -> None:
    async with ThinkHarness(model=ScriptedModel(script), tools=[long_task], data_dir=DATA / "db") as harness:
        session = harness.session()  # the root session: its streams are buffered, a cut-off reply is rebuilt
        if mode == "submit":
            accepted = await session.submit("plan the release", operation_id="op-plan")
            print(orjson.dumps(asdict(accepted)).decode(), flush=True)
            await anyio.sleep_forever()
        answer = await session.wait("op-plan", timeout=60)
        print(orjson.dumps({"status": answer.status, "text": getattr(answer, "text", None),
                            "messages": [f"{m.role}: {m.text}" for m in session.messages()]}).decode(), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[2])
