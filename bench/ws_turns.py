"""Chat over real WebSockets: turn latency, turn throughput, and history load on connect.

    python bench/ws_turns.py [--turns 200] [--agents 20] [--per-agent 10] [--history 1000 10000]
                             [--flat 10 1000] [--flat-turns 40] [--only-flat] [--no-deflate] [--compress-all]

The server runs in its own process (uvicorn, on `think serve`'s WebSocket protocol), so the
client's CPU does not distort it; the model answers instantly (a scripted reply of a few words),
so what is measured is the framework: frames in, turn queue, SQLite persistence, fan-out, frames
out. Prints:

* send → done latency (p50 / p99 / mean) over `--turns` sequential turns on one socket;
* throughput: `--agents` agents, each sent `--per-agent` chat requests at once, over one socket
  per agent (each agent runs its turns one at a time; agents run concurrently);
* send → done against transcript length, through the real npm client (`bench/ws_client.mjs`:
  `AgentClient` and the chat transport `useAgentChat` uses, sending the whole transcript with
  every request as the hook does) for conversations of each `--flat` size, and the ratio of the
  longest to the shortest (the target is ≤ 1.15×); needs Node and `npm ci` in tests/node. With it,
  the CPU of both processes per turn, and the client's own JSON work per turn (building the
  request around the transcript, parsing the transcript frame the protocol sends before `done` in
  each of the client's three listeners): the ratio that work alone sets, whatever the server does;
* connect → history: open a socket and receive the stored transcript (`cf_agent_chat_messages`,
  then identity, MCP and the probe answer) with `AgentClient` (the frame is parsed, the messages
  are validated only when read), for conversations of each `--history` size, cold (the agent's
  first use since the server started: its SQLite file is opened and read) and warm (it is live),
  and the same over HTTP `get-messages`.

Figures, not assertions: the machines are shared and noisy; compare within one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from think import Message, Think
from think.client import AgentClient
from think.models.base import ModelRequest
from think.testing.models import ScriptedModel

ANSWER = "Sure, here is a short answer of about a dozen words for you."


def instant(request: ModelRequest) -> str:
    return ANSWER


class BenchChat(Think):
    model = ScriptedModel(instant)

    def get_model(self) -> ScriptedModel:
        return self.model


# ---- the server process ----------------------------------------------------------------------------


def serve(data_dir: str, profile: str | None = None, *, deflate: bool = True, compress_all: bool = False) -> None:
    """Run the server; print the port on the first line of stdout. With `profile`, the server
    runs under cProfile and writes its stats there when it stops."""
    import logging

    import uvicorn

    from think.runtime import EmbeddedRuntime
    from think.server import create_app
    from think.server.websocket import WebSocketProtocol

    logging.basicConfig(level=logging.WARNING)
    app = create_app([BenchChat], runtime=EmbeddedRuntime(data_dir, idle_timeout=600))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    print(sock.getsockname()[1], flush=True)
    # think serve's protocol (short messages uncompressed), or with `compress_all` uvicorn's own
    ws: Any = "websockets-sansio" if compress_all else WebSocketProtocol
    server = uvicorn.Server(uvicorn.Config(app, lifespan="on", log_level="warning", ws=ws,
                                           ws_max_size=64 * 1024 * 1024, ws_per_message_deflate=deflate))
    if profile is None:
        server.run(sockets=[sock])
        return
    import cProfile
    import signal

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)  # uvicorn re-raises the signal it caught once it has shut down

    signal.signal(signal.SIGTERM, stop)
    profiler = cProfile.Profile()
    try:
        profiler.runcall(server.run, sockets=[sock])
    except SystemExit:
        pass
    profiler.dump_stats(profile)


class ServerProcess:
    def __init__(self, data_dir: str, profile: str | None = None, *, deflate: bool = True,
                 compress_all: bool = False) -> None:
        mode = "plain" if not deflate else "deflate-all" if compress_all else "deflate"
        command = [sys.executable, __file__, "--serve", data_dir, mode,
                   *([profile] if profile else [])]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                        text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.strip():
            raise RuntimeError("the server process did not start")
        self.port = int(line)
        self.base = f"ws://127.0.0.1:{self.port}/agents/bench-chat"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


# ---- measurements ----------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux), to separate its cost from machine noise."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def latency(server: ServerProcess, turns: int) -> None:
    async with AgentClient.connect(f"{server.base}/latency", compression=None) as client:
        for i in range(10):  # warm-up: imports, first SQLite pages, code paths
            await (await client.send_chat(f"warm-up {i}"))
        times = []
        cpu_before = cpu_seconds(server.process.pid)
        for i in range(turns):
            start = time.perf_counter()
            turn = await (await client.send_chat(f"question {i}"))
            times.append(time.perf_counter() - start)
            assert turn.outcome == "completed", turn
        cpu_after = cpu_seconds(server.process.pid)
    print(f"send → done, {turns} sequential turns on one socket:")
    print(f"  p50 {ms(percentile(times, 50))}   p99 {ms(percentile(times, 99))}   "
          f"mean {ms(statistics.fmean(times))}   ({turns / sum(times):.0f} turns/s back to back)")
    if cpu_before is not None and cpu_after is not None:
        print(f"  server CPU {ms((cpu_after - cpu_before) / turns)} a turn")


async def throughput(server: ServerProcess, agents: int, per_agent: int) -> None:
    warmed: list[int] = []
    all_warm, go = anyio.Event(), anyio.Event()
    finished: list[float] = []

    async def one_agent(index: int) -> None:
        async with AgentClient.connect(f"{server.base}/tp-{index}", compression=None) as client:
            await (await client.send_chat("warm-up"))
            warmed.append(index)
            if len(warmed) == agents:
                all_warm.set()
            await go.wait()
            turns = [await client.send_chat(f"q{j}", request_id=f"a{index}-t{j}") for j in range(per_agent)]
            for turn in turns:
                assert (await turn).outcome == "completed", turn
            finished.append(time.perf_counter())

    async with anyio.create_task_group() as tasks:
        for index in range(agents):
            tasks.start_soon(one_agent, index)
        await all_warm.wait()  # every agent is connected and has run a turn; now all send at once
        start = time.perf_counter()
        go.set()
    elapsed = max(finished) - start
    total = agents * per_agent
    print(f"throughput, {agents} agents × {per_agent} concurrent turns ({total} turns):")
    print(f"  {total / elapsed:7.0f} turns/s   ({ms(elapsed)} for all)")


async def wire_flat(server: ServerProcess, sizes: list[int], turns: int) -> None:
    """send → done through the npm client, one agent per transcript size (filled beforehand)."""
    node = shutil.which("node")
    script = Path(__file__).with_name("ws_client.mjs")
    if node is None or not (script.parents[1] / "tests" / "node" / "node_modules" / "agents").exists():
        print("send → done by transcript length: skipped (needs node and `npm ci` in tests/node)")
        return
    print(f"send → done by transcript length, npm AgentClient sending whole transcripts ({turns} turns each):")
    p50s: dict[int, float] = {}
    floors: dict[int, float] = {}  # the client's own JSON work per turn, ms (see ws_client.mjs)
    warm_up = {"host": f"127.0.0.1:{server.port}", "agent": "bench-chat", "name": "flat-warm-up", "turns": 5}
    await anyio.run_process([node, str(script), orjson.dumps(warm_up).decode()], check=True)  # the process's first
    for size in sizes:
        plan = {"host": f"127.0.0.1:{server.port}", "agent": "bench-chat", "name": f"flat-{size}",
                "turns": turns, "warmup": 5}
        cpu_before = cpu_seconds(server.process.pid)
        with anyio.fail_after(600):
            result = await anyio.run_process([node, str(script), orjson.dumps(plan).decode()],
                                              check=True)
        cpu_after = cpu_seconds(server.process.pid)
        report = orjson.loads(result.stdout)
        times = [t / 1000 for t in report["times"]]
        p50s[size] = percentile(times, 50)
        cpu = "" if cpu_before is None or cpu_after is None else \
            f"   server CPU {ms((cpu_after - cpu_before) / (turns + 5)).strip()} a turn"
        floors[size] = report["json"]
        print(f"  {report['start']:6,} → {report['end']:6,} messages: p50 {ms(p50s[size])}   "
              f"p99 {ms(percentile(times, 99))}{cpu}   client CPU {report['cpu']:.1f} ms a turn, "
              f"of which its JSON {report['json']:.2f} ms ({report['frameBytes'] / 1000:,.0f} kB transcript frame)")
    if len(p50s) > 1:
        low, high = min(p50s), max(p50s)
        print(f"  p50 at {high:,} / p50 at {low:,}: {p50s[high] / p50s[low]:.2f}×")
        # What the client alone adds as the transcript grows, were the server's cost flat: the
        # request it builds and the transcript frame its listeners parse are the protocol's.
        bound = (p50s[low] + (floors[high] - floors[low]) / 1000) / p50s[low]
        print(f"  the client's JSON alone: +{floors[high] - floors[low]:.2f} ms a turn at {high:,} → "
              f"at least {bound:.2f}× with a server whose cost did not grow at all (target ≤ 1.15×)")


async def fill(data_dir: str, name: str, count: int) -> None:
    """Write `count` messages into an agent's storage, without a server."""
    from think.runtime import EmbeddedRuntime

    runtime = EmbeddedRuntime(data_dir, idle_timeout=0)
    async with runtime.lease(BenchChat, name) as agent:
        batch = []
        for i in range(count // 2):
            batch.append(Message.user(f"Question number {i}: what about the thing we discussed?", id=f"u{i}"))
            batch.append(Message.from_json({"id": f"a{i}", "role": "assistant", "parts": [
                {"type": "step-start"}, {"type": "text", "text": f"{ANSWER} ({i})", "state": "done"}]}))
        agent.session.save(batch)
    await runtime.close()


async def history(server: ServerProcess, sizes: list[int], samples: int) -> None:
    print("connect → history (socket open, transcript received, handshake answered):")
    async with AgentClient.connect(f"{server.base}/warm-up") as client:  # warm the processes, not the agents
        await (await client.send_chat("hello"))
    for size in sizes:
        cold: list[float] = []
        warm: list[float] = []
        http_warm: list[float] = []
        for s in range(samples):
            url = f"{server.base}/history-{size}-{s}"
            for attempt in range(6):
                start = time.perf_counter()
                async with AgentClient.connect(url) as client:
                    elapsed = time.perf_counter() - start
                    assert client.message_count == size, client.message_count
                (cold if attempt == 0 else warm).append(elapsed)
            async with httpx.AsyncClient() as http:
                for _ in range(5):
                    start = time.perf_counter()
                    response = await http.get(url.replace("ws://", "http://") + "/get-messages")
                    http_warm.append(time.perf_counter() - start)
                    assert response.status_code == 200
        size_mb = len(response.content) / 1e6
        print(f"  {size:6,} messages ({size_mb:.1f} MB): cold {ms(statistics.median(cold))}   "
              f"warm {ms(statistics.median(warm))}   HTTP get-messages warm {ms(statistics.median(http_warm))}")
        print(f"  {'':6} cold samples {', '.join(ms(c).strip() for c in cold)}; warm min {ms(min(warm)).strip()}")


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        for size in [] if args.only_flat else args.history:
            for s in range(args.samples):
                await fill(data_dir, f"history-{size}-{s}", size)
        for size in args.flat:
            await fill(data_dir, f"flat-{size}", size)
        server = ServerProcess(data_dir, args.profile, deflate=not args.no_deflate, compress_all=args.compress_all)
        try:
            print(f"server pid {server.process.pid} on port {server.port}; Python {sys.version.split()[0]}")
            if args.only_flat:
                await wire_flat(server, args.flat, args.flat_turns)
                return
            await history(server, args.history, args.samples)  # first, so cold really is cold
            await latency(server, args.turns)
            await wire_flat(server, args.flat, args.flat_turns)
            await throughput(server, args.agents, args.per_agent)
        finally:
            server.stop()


if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "--serve":
        serve(sys.argv[2], *sys.argv[4:], deflate=sys.argv[3] != "plain", compress_all=sys.argv[3] == "deflate-all")
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--per-agent", type=int, default=10)
    parser.add_argument("--history", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--flat", type=int, nargs="*", default=[10, 1000],
                        help="transcript sizes for send → done through the npm client (none: skip)")
    parser.add_argument("--flat-turns", type=int, default=40)
    parser.add_argument("--profile", metavar="FILE", help="run the server under cProfile, stats to FILE")
    parser.add_argument("--only-flat", action="store_true", help="measure only send → done by transcript length")
    parser.add_argument("--no-deflate", action="store_true",
                        help="the server offers no permessage-deflate (frames go uncompressed both ways)")
    parser.add_argument("--compress-all", action="store_true",
                        help="uvicorn's own protocol, every message compressed (think serve's sends short ones plain)")
    parser.add_argument("--samples", type=int, default=3, help="agents per history size (cold samples)")
    anyio.run(main, parser.parse_args())
