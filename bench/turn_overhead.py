"""Framework overhead of one chat turn, with an instant scripted model and real SQLite persistence.

    python bench/turn_overhead.py [--turns 300] [--new 300] [--long 2000] [--agents 1000]

Prints:
* CPU milliseconds for the first turn of a brand-new agent (its database file, schema and first
  one-tool turn), median of `--new` agents, and brand-new agents per second on one event loop;
* CPU and wall milliseconds per one-tool turn (user → tool call → tool → text), median of N turns,
  sequential turns per second, and the SQL statements and commits one such turn costs;
* per-turn cost for the first turns of a conversation vs after `--long` messages in it;
* database bytes per message beyond its content;
* resident memory per hibernated agent, for `--agents` agents.

Figures, not assertions: compare ratios from one run (the machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from think import Think, tool
from think.runtime import EmbeddedRuntime
from think.testing.models import ScriptedModel, call


@tool
def lookup(city: str) -> dict[str, object]:
    """Look up the weather in a city."""
    return {"city": city, "temperature": 21, "sky": "clear"}


def one_tool_reply(request: object) -> object:
    # Step 1 calls the tool; step 2 (after the tool result) answers.
    messages = request.messages  # type: ignore[attr-defined]
    if messages and messages[-1].role == "tool":
        return "It is 21 degrees and clear in Lisbon today."
    return [call("lookup", city="Lisbon")]


MODEL = ScriptedModel(one_tool_reply)


class Bench(Think):
    def get_model(self) -> ScriptedModel:
        return MODEL

    def get_tools(self) -> list[object]:
        return [lookup]


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def timed_turns(agent: Bench, count: int) -> tuple[list[float], list[float]]:
    cpu: list[float] = []
    wall: list[float] = []
    for i in range(count):
        MODEL.requests.clear()  # the test double keeps requests; do not let that grow
        c0, w0 = time.process_time(), time.perf_counter()
        result = await agent.save_messages([f"What is the weather in Lisbon? ({i})"])
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
        assert result.status == "completed", result
    return cpu, wall


async def storage_writes(agent: Bench) -> tuple[int, int]:
    """(statements, commits) of one one-tool turn on an existing conversation, counted with SQLite's
    trace callback: a figure that does not depend on how busy the machine is."""
    seen: list[str] = []
    agent.db.connection.set_trace_callback(seen.append)
    try:
        MODEL.requests.clear()
        await agent.save_messages(["What is the weather in Lisbon?"])
    finally:
        agent.db.connection.set_trace_callback(None)
    statements = commits = 0
    explicit = False
    for sql in seen:
        word = sql.split(None, 1)[0].upper()
        if word == "BEGIN":
            explicit = True
        elif word == "COMMIT":
            explicit = False
            commits += 1
        else:
            statements += 1
            if not explicit and word in ("INSERT", "UPDATE", "DELETE", "REPLACE"):
                commits += 1  # outside a transaction a write is its own commit
    return statements, commits


async def new_agents(runtime: EmbeddedRuntime, count: int) -> tuple[list[float], float]:
    """CPU ms of each brand-new agent's first turn (get() creates its database), and the wall seconds."""
    cpu: list[float] = []
    w0 = time.perf_counter()
    for i in range(count):
        MODEL.requests.clear()
        c0 = time.process_time()
        agent = await runtime.get(Bench, f"new-{i}")
        result = await agent.save_messages(["What is the weather in Lisbon?"])
        cpu.append((time.process_time() - c0) * 1000)
        assert result.status == "completed", result
    return cpu, time.perf_counter() - w0


async def main(turns: int, new: int, long: int, agents: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="think-bench-"))
    runtime = EmbeddedRuntime(root, idle_timeout=None)
    print(f"think turn overhead — python {sys.version.split()[0]}, pid {os.getpid()}, data in {root}")

    # 1. One-tool turns in fresh conversations (warm-up first).
    warm = await runtime.get(Bench, "warmup")
    await timed_turns(warm, 30)
    cpu: list[float] = []
    wall: list[float] = []
    for n in range(turns // 10):
        agent = await runtime.get(Bench, f"fresh-{n}")
        c, w = await timed_turns(agent, 10)
        cpu += c
        wall += w
    print(f"\none-tool turn, {len(cpu)} turns (10 per conversation):")
    p90 = statistics.quantiles(cpu, n=10)[8]
    print(f"  framework CPU  median {statistics.median(cpu):.3f} ms   p90 {p90:.3f} ms")
    p90 = statistics.quantiles(wall, n=10)[8]
    print(f"  wall           median {statistics.median(wall):.3f} ms   p90 {p90:.3f} ms")
    print(f"  sequential     {1000 / statistics.mean(wall):.0f} turns/s on one event loop")
    statements, commits = await storage_writes(agent)
    print(f"  storage        {statements} SQL statements, {commits} commits per turn")

    # 1b. The first turn of a brand-new agent: database file + schema + turn.
    if new:
        cpu, seconds = await new_agents(runtime, new)
        p90 = statistics.quantiles(cpu, n=10)[8]
        print(f"\nbrand-new agent, first turn, {new} agents (file + schema + one-tool turn):")
        print(f"  CPU            median {statistics.median(cpu):.3f} ms   p90 {p90:.3f} ms  (target ≤ 3 ms)")
        print(f"  sequential     {new / seconds:.0f} new agents/s on one event loop (target 1,000/s)")

    # 2. Cost growth: the first turns of a conversation vs after `long` messages.
    agent = await runtime.get(Bench, "long")
    first_cpu, _ = await timed_turns(agent, 20)
    per_turn_messages = 2
    while len(agent.messages) < long:
        await timed_turns(agent, 50)
    late_cpu, _ = await timed_turns(agent, 20)
    print(f"\ncost growth in one conversation ({per_turn_messages} messages per turn):")
    print(f"  first 20 turns         median CPU {statistics.median(first_cpu):.3f} ms")
    print(f"  after {len(agent.messages) - 40:,} messages  median CPU {statistics.median(late_cpu):.3f} ms")
    ratio = statistics.median(late_cpu) / statistics.median(first_cpu)
    print(f"  ratio                  {ratio:.2f}x  (target ≤ 1.1x)")

    # 3. Storage per message beyond its content.
    db = agent.db
    db.sql("PRAGMA wal_checkpoint(TRUNCATE)")
    rows = db.value("SELECT count(*) FROM think_messages")
    content = db.value("SELECT sum(length(body)) FROM think_messages")
    # Stream chunk buffers are transient (deleted 10 minutes after a turn): counted apart.
    transient = ("think_streams", "think_stream_chunks", "think_stream_terminal")
    sizes = {r["name"]: r["bytes"] for r in db.sql("SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name")}
    buffered = sum(size for name, size in sizes.items() if name.startswith(transient)
                   or name.startswith("sqlite_autoindex_think_stream"))
    kept = sum(sizes.values()) - buffered
    print("\nstorage:")
    print(f"  {rows:,} messages, {content / rows:.0f} bytes of JSON each on average")
    print(f"  durable data {kept / 1024:.0f} KiB → {(kept - content) / rows:.0f} bytes per message beyond its "
          "content (target ≤ 1,024; messages, indexes, full-text search)")
    print(f"  stream buffers awaiting their 10-minute cleanup: {buffered / 1024:.0f} KiB")
    await runtime.close()

    # 4. Resident memory per hibernated agent.
    hib = EmbeddedRuntime(root / "hibernation", idle_timeout=0)
    for i in range(20):  # warm caches and allocator pools first
        async with hib.lease(Bench, f"warm-{i}") as a:
            await a.save_messages(["hello"])
    gc.collect()
    tracemalloc.start()
    before_rss = rss_kib()
    snap0 = tracemalloc.take_snapshot()
    for i in range(agents):
        async with hib.lease(Bench, f"agent-{i}") as a:
            MODEL.requests.clear()  # the test double keeps requests; they are not the agent's memory
            await a.save_messages(["hello"])
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    after_rss = rss_kib()
    grown = sum(stat.size_diff for stat in snap1.compare_to(snap0, "filename"))
    tracemalloc.stop()
    print(f"\n{agents:,} agents, each ran a turn and was hibernated:")
    print(f"  live instances after: {len(hib.live())}")
    print(f"  Python heap growth  {grown / agents:,.0f} bytes per hibernated agent (target ≤ 5 KB)")
    print(f"  process RSS growth  {(after_rss - before_rss) * 1024 / agents:,.0f} bytes per hibernated agent "
          "(allocator noise included)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--new", type=int, default=300)
    parser.add_argument("--long", type=int, default=2000)
    parser.add_argument("--agents", type=int, default=1000)
    args = parser.parse_args()
    anyio.run(main, args.turns, args.new, args.long, args.agents)
