"""The cluster runtime (`think serve --database`) against the embedded one, on this machine.

    python bench/cluster.py [--agents 30] [--per-agent 5] [--turns 100] [--kills 20] [--many 1000]
    python bench/cluster.py --quick          # throughput 1 vs 2 processes only, 5 interleaved rounds (~4 min)
    python bench/cluster.py --only many --many 10000

`--quick` measures only the throughput of 1 and 2 processes (and embedded), alternating them over
`--rounds` rounds (each on a fresh database) and printing every round and the median ratio, so one
busy moment of the machine does not decide the figure. `--only` picks sections
(throughput, latency, kills, many).

Starts its own PostgreSQL (tests/cluster/postgres.py) and real `think serve` processes; the model
answers at once (or streams slowly, for fan-out), so what is measured is the framework. Prints:

* throughput (turns/s): `--agents` agents, `--per-agent` turns each (sequential per agent, agents
  concurrent), sockets spread round-robin over 1, 2 and 3 processes, and embedded (one process);
* send → first token and send → done, p50/p99 over `--turns` sequential turns: embedded, cluster
  with the socket on the agent's process, and with the socket forwarded from another process;
* fan-out: a turn streamed to one socket on the agent's process and one on another process: the
  extra delay of each chunk on the forwarded socket (p50/p99);
* `--kills` rounds of SIGKILL of the process running a turn (the crash agent of the recovery
  tests: a tool call, then a streamed answer; killed after the tool call ended): turns lost,
  duplicate tool runs, recovery time (kill → the whole answer stored) p50/max;
* `--many` agents given one turn each: rows and bytes per agent in Postgres, cold turn latency.

Figures, not assertions: the 2 cores are shared with the client and the database.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import anyio
import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cluster.postgres import postgres_server  # noqa: E402
from tests.recovery.crash_agents import answer  # noqa: E402
from tests.recovery.crash_lanes import turn_text  # noqa: E402
from tests.submissions.server_process import ServerProcess, spawn_think_serve  # noqa: E402
from think.client import AgentClient  # noqa: E402

APP = "bench.cluster_app"
CRASH = "tests.recovery.crash_agents:Crashy"
HEALTH = "/_think/health"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def fresh_database(server: str) -> str:
    name = f"bench_{os.urandom(4).hex()}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(name)))
    return server.rsplit("/", 1)[0] + "/" + name


@contextmanager
def processes(targets: list[str], count: int, *, database: str | None, env: dict[str, str] | None = None,
              data_dir: str | None = None) -> Iterator[list[ServerProcess]]:
    with ExitStack() as stack:
        nodes = []
        for k in range(count):
            extra = ["--database", database] if database else ["--data-dir", data_dir or ""]
            node = spawn_think_serve([*targets, *extra], {**(env or {}), "THINK_NODE_ID": f"n{k}"})
            stack.callback(node.stop)
            nodes.append(node)
        for node in nodes:
            node.wait_ready(HEALTH)
        yield nodes


# ---- throughput and latency ------------------------------------------------------------------------


async def throughput(nodes: list[ServerProcess], agents: int, per_agent: int) -> float:
    async def one(k: int) -> None:
        node = nodes[k % len(nodes)]
        async with AgentClient.connect(f"{node.ws}/agents/bench-chat/t{k}", call_timeout=60) as client:
            for _ in range(per_agent):
                await (await client.send_chat("hello")).wait()

    started = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for k in range(agents):
            tasks.start_soon(one, k)
    return agents * per_agent / (time.perf_counter() - started)


async def latency(owner_node: ServerProcess, socket_node: ServerProcess, name: str,
                  turns: int) -> tuple[list[float], list[float]]:
    first: list[float] = []
    done: list[float] = []
    async with AgentClient.connect(f"{owner_node.ws}/agents/bench-chat/{name}", call_timeout=60), \
            AgentClient.connect(f"{socket_node.ws}/agents/bench-chat/{name}", call_timeout=60) as client:
        for _ in range(turns):
            sent = time.perf_counter()
            turn = await client.send_chat("hello")
            async for _chunk in turn:
                if turn.text:
                    first.append(time.perf_counter() - sent)
                    break
            await turn.wait()
            done.append(time.perf_counter() - sent)
    return first, done


async def fanout(a: ServerProcess, b: ServerProcess, rounds: int) -> list[float]:
    delays: list[float] = []
    for r in range(rounds):
        arrived: dict[str, dict[int, float]] = {"a": {}, "b": {}}

        def recorder(side: str, arrived: dict[str, dict[int, float]] = arrived):  # type: ignore[no-untyped-def]
            def on_frame(frame: object) -> None:
                seq = getattr(frame, "seq", None)
                if seq is not None:
                    arrived[side].setdefault(seq, time.perf_counter())
            return on_frame

        url = f"agents/slow/f{r}"
        async with AgentClient.connect(f"{a.ws}/{url}", call_timeout=60, on_frame=recorder("a")) as on_a, \
                AgentClient.connect(f"{b.ws}/{url}", call_timeout=60, on_frame=recorder("b")) as on_b:
            turn = await on_a.send_chat("go")
            await turn.wait()
            await on_b.wait_until(lambda c, arrived=arrived: len(arrived["b"]) >= len(arrived["a"]))
        delays += [arrived["b"][s] - t for s, t in arrived["a"].items() if s in arrived["b"]]
    return delays


# ---- kills -----------------------------------------------------------------------------------------


def tool_lines(tools: Path, prefix: str) -> int:
    """Lines of the tools' log starting with `prefix` (a plain file read: tiny and local)."""
    return sum(line.startswith(prefix) for line in (tools.read_text().splitlines() if tools.exists() else []))


def owner_of(database: str, key: str) -> str | None:
    with psycopg.connect(database, autocommit=True) as conn:
        row = conn.execute("SELECT node_id FROM think_agents WHERE agent_key = %s", (key,)).fetchone()
    return None if row is None else row[0]


async def kills(database: str, rounds: int, tools: Path) -> tuple[int, int, list[float]]:
    env = {"THINK_TEST_TOOLS": str(tools), "THINK_TEST_WAKE_AFTER": "600", "THINK_TEST_BACKOFF": "0.2"}
    lost = duplicates = 0
    recovery: list[float] = []
    with ExitStack() as stack:
        nodes: list[ServerProcess] = []
        for k in range(3):
            node = spawn_think_serve([CRASH, "--database", database], {**env, "THINK_NODE_ID": f"k{k}"})
            nodes.append(node)
        for node in nodes:
            node.wait_ready(HEALTH)
        stack.callback(lambda: [node.stop() for node in nodes])
        async with httpx.AsyncClient(timeout=30) as http:
            for r in range(rounds):
                question = f"question {r}"
                victim = r % 3
                node = nodes[victim]
                before = tool_lines(tools, "end ")
                async with AgentClient.connect(f"{node.ws}/agents/crashy/r{r}", call_timeout=30) as client:
                    await client.send_chat(question)
                    deadline = time.monotonic() + 30
                    while tool_lines(tools, "end ") <= before:
                        assert time.monotonic() < deadline, "the tool call never ended"
                        await anyio.sleep(0.005)
                    assert owner_of(database, f"crashy/r{r}") == f"k{victim}"
                    node.kill()
                killed = time.perf_counter()
                survivor = nodes[(victim + 1) % 3]
                finished = False
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    if owner_of(database, f"crashy/r{r}") not in (None, f"k{victim}"):  # taken over, unasked
                        got = await http.get(f"{survivor.http}/agents/crashy/r{r}/get-messages")
                        if got.status_code == 200 and answer(question) in (turn_text(got.json(), question) or ""):
                            finished = True
                            break
                    await anyio.sleep(0.02)
                if finished:
                    recovery.append(time.perf_counter() - killed)
                else:
                    lost += 1
                duplicates = max(0, tool_lines(tools, "start") - (r + 1))  # one tool call per question
                nodes[victim] = spawn_think_serve([CRASH, "--database", database],
                                                  {**env, "THINK_NODE_ID": f"k{victim}"})
                nodes[victim].wait_ready(HEALTH)
    return lost, duplicates, recovery


# ---- many agents -----------------------------------------------------------------------------------


async def many(database: str, count: int, concurrency: int = 20) -> tuple[float, float, float, float, float,
                                                                          list[float]]:
    """Give `count` agents a turn each; stop the process (it writes every agent back); measure
    Postgres; then time first turns of closed agents on a fresh process."""

    async def one(node: ServerProcess, k: int) -> None:
        async with AgentClient.connect(f"{node.ws}/agents/bench-chat/m{k}", call_timeout=60) as client:
            await (await client.send_chat("hello")).wait()

    limit = anyio.Semaphore(concurrency)
    done = [0]

    async def bounded(node: ServerProcess, k: int) -> None:
        async with limit:
            await one(node, k)
        done[0] += 1
        if done[0] % 1000 == 0:
            print(f"    {done[0]} agents had their turn", flush=True)

    with processes([APP], 1, database=database) as (node,):
        started = time.perf_counter()
        async with anyio.create_task_group() as tasks:
            for k in range(count):
                tasks.start_soon(bounded, node, k)
        rate = count / (time.perf_counter() - started)
        stopping = time.perf_counter()
        node.stop()  # SIGTERM with every agent open: the drain
        drain = time.perf_counter() - stopping
    with psycopg.connect(database, autocommit=True) as conn:
        [(rows,)] = conn.execute("SELECT count(*) FROM think_agents").fetchall()
        [(wal,)] = conn.execute("SELECT count(*) FROM think_agent_wal").fetchall()
        [(size,)] = conn.execute("SELECT coalesce(sum(octet_length(image)), 0) FROM think_agents").fetchall()
        [(total,)] = conn.execute("SELECT pg_total_relation_size('think_agents') "
                                  "+ pg_total_relation_size('think_agent_wal')").fetchall()
    cold: list[float] = []
    with processes([APP], 1, database=database) as (node,):
        for k in range(0, count, max(1, count // 50)):
            started = time.perf_counter()
            await one(node, k)
            cold.append(time.perf_counter() - started)
    return rate, drain, (rows + wal) / rows, size / rows, total / rows, cold


async def quick(server: str, scratch: str, args: argparse.Namespace) -> None:
    """Throughput of embedded, 1 and 2 processes, alternated over `args.rounds` rounds."""
    print(f"throughput, {args.agents} agents x {args.per_agent} turns (instant model), {args.rounds} rounds:")
    ratios: list[float] = []
    for r in range(args.rounds):
        with processes([APP], 1, database=None, data_dir=f"{scratch}/embedded{r}") as nodes:
            embedded = await throughput(nodes, args.agents, args.per_agent)
        rates = {}
        for count in ((1, 2) if r % 2 == 0 else (2, 1)):
            with processes([APP], count, database=fresh_database(server)) as nodes:
                await throughput(nodes, 4, 2)  # warm: imports, first agents, connections
                rates[count] = await throughput(nodes, args.agents, args.per_agent)
        ratios.append(rates[2] / rates[1])
        print(f"  round {r + 1}: embedded {embedded:6.1f}, 1 process {rates[1]:6.1f}, 2 processes "
              f"{rates[2]:6.1f} turns/s: {ratios[-1]:.2f}x", flush=True)
    print(f"  2 / 1 processes, median of {len(ratios)} rounds: {statistics.median(ratios):.2f}x "
          f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x)")


async def main(args: argparse.Namespace) -> None:
    with postgres_server() as server, tempfile.TemporaryDirectory() as scratch:
        if args.quick:
            await quick(server, scratch, args)
            return
        sections = set(args.only.split(",")) if args.only else {"throughput", "latency", "kills", "many"}
        if "throughput" in sections:
            await throughputs(server, scratch, args)
        if "latency" in sections:
            await latencies(server, scratch, args)
        if args.kills and "kills" in sections:
            lost, duplicates, recovery = await kills(fresh_database(server), args.kills, Path(scratch) / "tools.txt")
            print(f"{args.kills} kills of the process running a turn: lost {lost}, duplicate tool runs {duplicates}, "
                  f"recovery (kill -> answer stored) p50 {statistics.median(recovery):.2f} s, "
                  f"max {max(recovery):.2f} s")
        if args.many and "many" in sections:
            started = time.perf_counter()
            rate, drain, rows, image, total, cold = await many(fresh_database(server), args.many,
                                                               args.many_concurrency)
            print(f"{args.many} agents, a first turn each ({rate:.1f} new agents/s), SIGTERM drain with all of them "
                  f"open {drain:.2f} s: {rows:.1f} rows/agent, "
                  f"image {image / 1024:.1f} KiB/agent, {total / 1024:.1f} KiB/agent on disk (with TOAST and "
                  f"indexes); a turn of a closed agent (socket, open, turn) p50 {ms(pct(cold, 50))}, "
                  f"p99 {ms(pct(cold, 99))} (section took {time.perf_counter() - started:.0f} s)")


async def throughputs(server: str, scratch: str, args: argparse.Namespace) -> None:
    print(f"throughput, {args.agents} agents x {args.per_agent} turns (instant model):")
    with processes([APP], 1, database=None, data_dir=f"{scratch}/embedded") as nodes:
        print(f"  embedded, 1 process:  {await throughput(nodes, args.agents, args.per_agent):6.1f} turns/s")
    rates = {}
    for count in (1, 2, 3):
        with processes([APP], count, database=fresh_database(server)) as nodes:
            rates[count] = await throughput(nodes, args.agents, args.per_agent)
            print(f"  cluster, {count} process{'es' if count > 1 else ''}: {rates[count]:6.1f} turns/s")
    print(f"  2 / 1 processes: {rates[2] / rates[1]:.2f}x, 3 / 1: {rates[3] / rates[1]:.2f}x")


async def latencies(server: str, scratch: str, args: argparse.Namespace) -> None:
    with processes([APP], 1, database=None, data_dir=f"{scratch}/embedded-latency") as nodes:
        embedded = await latency(nodes[0], nodes[0], "lat", args.turns)
    with processes([APP], 2, database=fresh_database(server)) as (a, b):
        local = await latency(a, a, "lat", args.turns)
        forwarded = await latency(a, b, "lat2", args.turns)
        delays = await fanout(a, b, 5)
    print(f"latency over {args.turns} sequential turns (p50 / p99):")
    for label, (first, done) in (("embedded", embedded), ("cluster, socket on the agent's process", local),
                                 ("cluster, socket forwarded", forwarded)):
        print(f"  {label}: send -> first token {ms(pct(first, 50))} / {ms(pct(first, 99))}; "
              f"send -> done {ms(pct(done, 50))} / {ms(pct(done, 99))}")
    print(f"fan-out to a socket on another process: +{ms(pct(delays, 50))} p50, +{ms(pct(delays, 99))} p99 "
          f"({len(delays)} chunks)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=30)
    parser.add_argument("--per-agent", type=int, default=None, help="turns per agent (default 5; 20 with --quick)")
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--many", type=int, default=1000)
    parser.add_argument("--many-concurrency", type=int, default=20, help="agents given their turn at once")
    parser.add_argument("--quick", action="store_true", help="throughput of 1 vs 2 processes only, in --rounds rounds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated sections: throughput,latency,kills,many")
    options = parser.parse_args()
    if options.per_agent is None:
        options.per_agent = 20 if options.quick else 5
    anyio.run(main, options)
