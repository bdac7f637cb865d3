"""Memory an idle agent gives back when the runtime hibernates it, at once and after a collection.

    python bench/hibernation_memory.py [--agents 30] [--turns 40]

Each agent runs `--turns` one-tool turns (two messages each), then the runtime hibernates them
all with the cyclic collector paused. Prints the Python heap (tracemalloc) freed per agent by the
hibernation itself, then after a full collection. An agent's parts refer to each other, so what
nothing frees explicitly waits for the collector's next full pass, which in a busy server can be
long in coming.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import tracemalloc
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from turn_overhead import Bench, timed_turns

from think.runtime import EmbeddedRuntime


async def main(agents: int, turns: int) -> None:
    tracemalloc.start()
    runtime = EmbeddedRuntime(Path(tempfile.mkdtemp(prefix="think-hibernation-")), idle_timeout=None)
    for i in range(agents):
        await timed_turns(await runtime.get(Bench, f"a{i}"), turns)
    gc.collect()
    gc.disable()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(agents):
        assert await runtime.hibernate(Bench, f"a{i}")
    at_once = before - tracemalloc.get_traced_memory()[0]
    gc.collect()
    collected = before - tracemalloc.get_traced_memory()[0]
    gc.enable()
    print(f"{agents} agents of {turns * 2} messages each, hibernated by the runtime:")
    print(f"  heap freed at once           {at_once / agents / 1024:7.0f} KiB an agent")
    print(f"  after a full collection      {collected / agents / 1024:7.0f} KiB an agent")
    await runtime.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=30)
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    anyio.run(main, args.agents, args.turns)
