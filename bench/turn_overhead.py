"""Framework overhead of one chat turn, with an instant scripted model and real SQLite persistence.

    python bench/turn_overhead.py [--turns 300] [--new 300] [--long 2000] [--agents 1000]

Prints:
* CPU milliseconds for the first turn of a brand-new agent (its database file, schema and first
  one-tool turn), median of `--new` agents, and brand-new agents per second on one event loop;
* CPU and wall milliseconds per one-tool turn (user → tool call → tool → text), median of N turns,
  sequential turns per second, and the SQL statements, commits and pages written to the
  write-ahead log one such turn costs;
* beside both, the same work done by the "floor" (`floor_turn`): a hand-written async loop with
  no framework, keeping its conversation in memory and appending each turn's four messages to
  SQLite as one row each, in one transaction. Measured in blocks alternating with think's, it is
  a yardstick that moves with the machine: think's figure over the floor's compares across
  machines and afternoons where milliseconds do not (this machine's CPU figures vary by half
  from one run of the same code to the next);
* per-turn cost for the first turns of a conversation vs after `--long` messages in it;
* database bytes per message beyond its content;
* resident memory per hibernated agent, for `--agents` agents.

Figures, not assertions: compare ratios from one run (the machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sqlite3
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


async def floor_lookup(city: str) -> dict[str, object]:
    return {"city": city, "temperature": 21, "sky": "clear"}


async def floor_model(messages: list[dict[str, object]]) -> dict[str, object]:
    if messages[-1]["role"] == "tool":
        return {"role": "assistant", "content": "It is 21 degrees and clear in Lisbon today."}
    return {"role": "assistant", "tool_calls": [{"id": "call_1", "name": "lookup", "arguments": {"city": "Lisbon"}}]}


FLOOR_SCHEMA = "CREATE TABLE messages (seq INTEGER PRIMARY KEY, role TEXT NOT NULL, body TEXT NOT NULL)"


def floor_open(path: Path) -> sqlite3.Connection:
    """The floor's database: one table, WAL, `synchronous=NORMAL` as think's."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(f"{FLOOR_SCHEMA.replace('CREATE TABLE', 'CREATE TABLE IF NOT EXISTS')}")
    return db


async def floor_turn(db: sqlite3.Connection, history: list[dict[str, object]], text: str) -> None:
    """One one-tool turn with no framework: the model, the tool, the model again, then the turn's
    messages appended in one transaction."""
    new: list[dict[str, object]] = [{"role": "user", "content": text}]
    while True:
        reply = await floor_model(history + new)
        new.append(reply)
        calls = reply.get("tool_calls")
        if not calls:
            break
        for c in calls:  # type: ignore[attr-defined]
            new.append({"role": "tool", "id": c["id"], "content": await floor_lookup(**c["arguments"])})
    db.execute("BEGIN IMMEDIATE")
    db.executemany("INSERT INTO messages (role, body) VALUES (?, ?)", [(m["role"], json.dumps(m)) for m in new])
    db.execute("COMMIT")
    history += new


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


async def storage_writes(agent: Bench, turns: int = 20) -> tuple[int, int, float]:
    """(statements, commits) of one one-tool turn on an existing conversation, counted with
    SQLite's trace callback, and the pages written to the write-ahead log per turn over `turns`
    turns (one turn's count jumps when a b-tree page splits): figures that do not depend on how
    busy the machine is."""
    seen: list[str] = []
    db = agent.db
    autocheckpoint = int(db.value("PRAGMA wal_autocheckpoint"))
    db.sql("PRAGMA wal_autocheckpoint = 0")  # the log only grows during the count
    db.sql("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = Path(f"{db.path}-wal")
    before = os.path.getsize(wal)  # noqa: ASYNC240 - nothing else runs on the loop meanwhile
    for i in range(turns):
        if i == 0:
            db.connection.set_trace_callback(seen.append)
        try:
            MODEL.requests.clear()
            await agent.save_messages(["What is the weather in Lisbon?"])
        finally:
            db.connection.set_trace_callback(None)
    grown = os.path.getsize(wal) - max(before, 32)  # noqa: ASYNC240
    frames = grown / (24 + db.value("PRAGMA page_size")) / turns
    db.sql(f"PRAGMA wal_autocheckpoint = {autocheckpoint}")
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
    return statements, commits, frames


async def floor_turns(path: Path, count: int) -> list[float]:
    """CPU ms of each of the floor's turns in a conversation of its own at `path`."""
    db = floor_open(path)
    history: list[dict[str, object]] = []
    cpu: list[float] = []
    for i in range(count):
        c0 = time.process_time()
        await floor_turn(db, history, f"What is the weather in Lisbon? ({i})")
        cpu.append((time.process_time() - c0) * 1000)
    db.close()
    return cpu


async def new_agents(runtime: EmbeddedRuntime, count: int, floors: Path) -> tuple[list[float], float, list[float]]:
    """CPU ms of each brand-new agent's first turn (get() creates its database), the wall seconds
    of think's, and the CPU ms of the floor's first turn in a new database (its file and table
    created), one after each of think's."""
    cpu: list[float] = []
    floor: list[float] = []
    wall = 0.0
    for i in range(count):
        MODEL.requests.clear()
        c0, w0 = time.process_time(), time.perf_counter()
        agent = await runtime.get(Bench, f"new-{i}")
        result = await agent.save_messages(["What is the weather in Lisbon?"])
        cpu.append((time.process_time() - c0) * 1000)
        wall += time.perf_counter() - w0
        assert result.status == "completed", result
        c0 = time.process_time()
        db = floor_open(floors / f"new-{i}.db")
        await floor_turn(db, [], "What is the weather in Lisbon?")
        floor.append((time.process_time() - c0) * 1000)
        db.close()
    return cpu, wall, floor


async def main(turns: int, new: int, long: int, agents: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="think-bench-"))
    runtime = EmbeddedRuntime(root, idle_timeout=None)
    print(f"think turn overhead — python {sys.version.split()[0]}, pid {os.getpid()}, data in {root}")

    # 1. One-tool turns in fresh conversations (warm-up first).
    warm = await runtime.get(Bench, "warmup")
    await timed_turns(warm, 30)
    floors = root / "floor"
    floors.mkdir()
    for i in range(3):  # the floor's warm-up
        await floor_turns(floors / f"warm-{i}.db", 10)
    cpu: list[float] = []
    wall: list[float] = []
    floor: list[float] = []
    for n in range(turns // 10):
        agent = await runtime.get(Bench, f"fresh-{n}")
        c, w = await timed_turns(agent, 10)
        cpu += c
        wall += w
        floor += await floor_turns(floors / f"fresh-{n}.db", 10)
    print(f"\none-tool turn, {len(cpu)} turns (10 per conversation):")
    p90 = statistics.quantiles(cpu, n=10)[8]
    print(f"  framework CPU  median {statistics.median(cpu):.3f} ms   p90 {p90:.3f} ms")
    print(f"  floor CPU      median {statistics.median(floor):.3f} ms  (in alternating blocks) → think is "
          f"{statistics.median(cpu) / statistics.median(floor):.1f}x the floor")
    p90 = statistics.quantiles(wall, n=10)[8]
    print(f"  wall           median {statistics.median(wall):.3f} ms   p90 {p90:.3f} ms")
    print(f"  sequential     {1000 / statistics.mean(wall):.0f} turns/s on one event loop")
    statements, commits, frames = await storage_writes(agent)
    print(f"  storage        {statements} SQL statements, {commits} commits, {frames:.1f} pages written to the "
          "log per turn (mean of 20)")

    # 1b. The first turn of a brand-new agent: database file + schema + turn.
    if new:
        cpu, seconds, floor = await new_agents(runtime, new, floors)
        p90 = statistics.quantiles(cpu, n=10)[8]
        print(f"\nbrand-new agent, first turn, {new} agents (file + schema + one-tool turn):")
        print(f"  CPU            median {statistics.median(cpu):.3f} ms   p90 {p90:.3f} ms  (target ≤ 3 ms)")
        print(f"  floor CPU      median {statistics.median(floor):.3f} ms  (its file, table and first turn, one "
              f"after each of think's) → think is {statistics.median(cpu) / statistics.median(floor):.1f}x the floor")
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
