"""What resumable streams cost: replaying a long buffered stream, and buffering chunks as they stream.

    python bench/resume.py [--chunks 10000] [--turns 40] [--deltas 500]

Prints:
* the time to replay `--chunks` buffered chunks to a reconnecting client (read from SQLite, one
  `cf_agent_use_chat_response` frame each), for a finished stream and for the live one;
* the CPU time of a turn with an instant model (`--deltas` text deltas) with the buffer on and
  off, the per-chunk cost of buffering, and its share of the turn (target: ≤ 10%):
  - in process, with no socket (each chunk is only encoded into the frame a socket would get):
    the worst case, where the turn itself costs least;
  - served: a real server process streaming to one connected client over a WebSocket on
    127.0.0.1, its CPU time read from /proc (the client's is not counted).

Figures, not assertions: compare ratios from one run (the machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.lowlevel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from think import Think
from think.models.base import ModelRequest
from think.models.events import Finish, StreamEvent, TextDelta
from think.protocol.codec import encode_frame
from think.protocol.frames import ChatResponse
from think.runtime import EmbeddedRuntime
from think.stream.fanout import ChunkEvent, TurnEvent, TurnFinished, TurnStarted

DELTAS = 500


class InstantModel:
    model_id = "instant"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        for i in range(DELTAS):
            yield TextDelta(f"word{i % 97} ")
        yield Finish("stop")


class Bench(Think):
    workspace_bash = False

    def __init__(self, name: str, **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        if name.startswith("off-"):  # the same agent without its resumable buffer
            self.fanout.listeners.remove(self.streams.on_event)

    def get_model(self) -> InstantModel:
        return InstantModel()

    def get_skill_script_runner(self) -> None:
        return None


def replay_frames(agent: Bench, request_id: str) -> int:
    """What a resume ACK does: every buffered chunk as a replay frame (the socket write left out)."""
    sent = 0
    for seq, body in agent.streams.chunks(request_id):
        encode_frame(ChatResponse(id=request_id, body=body, seq=seq, replay=True))
        sent += 1
    return sent


async def bench_replay(runtime: EmbeddedRuntime, chunks: int) -> None:
    agent = await runtime.get(Bench, "replay")
    await agent.fanout.publish(TurnStarted("long"))
    for seq in range(chunks):
        await agent.fanout.publish(ChunkEvent("long", seq, {"type": "text-delta", "id": "txt-0",
                                                            "delta": f"word{seq % 97} "}))
    rows = agent.db.value("SELECT count(*) FROM think_stream_chunks WHERE request_id = 'long'")
    live_times = []
    for _ in range(5):
        t = time.perf_counter()
        assert replay_frames(agent, "long") == chunks
        live_times.append((time.perf_counter() - t) * 1000)
    await agent.fanout.publish(TurnFinished("long", "completed"))
    done_times = []
    for _ in range(5):
        t = time.perf_counter()
        assert replay_frames(agent, "long") == chunks
        done_times.append((time.perf_counter() - t) * 1000)
    print(f"\nreplay of {chunks:,} buffered chunks ({rows:,} rows in SQLite):")
    print(f"  live stream      median {statistics.median(live_times):.1f} ms "
          f"({statistics.median(live_times) * 1000 / chunks:.2f} µs a chunk)")
    print(f"  finished stream  median {statistics.median(done_times):.1f} ms "
          f"({statistics.median(done_times) * 1000 / chunks:.2f} µs a chunk)")


async def turn_cpu(agent: Bench, turns: int) -> list[float]:
    cpu: list[float] = []
    for i in range(turns):
        c0 = time.process_time()
        result = await agent.save_messages([f"go {i}"])
        cpu.append((time.process_time() - c0) * 1000)
        assert result.status == "completed", result
    return cpu


async def bench_buffering(runtime: EmbeddedRuntime, turns: int) -> None:
    agents = {}
    for label in ("on", "off"):
        agent = await runtime.get(Bench, f"{label}-turns")

        async def socket(event: TurnEvent, agent: Bench = agent) -> None:
            # what a served agent's chat channel does with each chunk for one connected socket
            if isinstance(event, ChunkEvent):
                encode_frame(ChatResponse(id=event.request_id, body=agent.streams.body_of(event), seq=event.seq))

        agent.fanout.subscribe(socket)
        agents[label] = agent
        await turn_cpu(agent, 5)  # warm up
    on: list[float] = []
    off: list[float] = []
    for _ in range(turns // 5):  # interleaved, so machine noise hits both alike
        on += await turn_cpu(agents["on"], 5)
        off += await turn_cpu(agents["off"], 5)
    chunks = DELTAS + 7  # start, start-step, text-start, the deltas, text-end, finish-step, finish
    med_on, med_off = statistics.median(on), statistics.median(off)
    rows = agents["on"].db.value("SELECT count(*) FROM think_stream_chunks")
    streams = agents["on"].db.value("SELECT count(*) FROM think_streams")
    print(f"\na turn of {chunks} chunks (instant model), {len(on)} turns each way:")
    print(f"  buffer off  median CPU {med_off:.2f} ms")
    print(f"  buffer on   median CPU {med_on:.2f} ms   ({rows / max(1, streams):.0f} rows a turn)")
    print(f"  buffering   {(med_on - med_off) * 1000 / chunks:.2f} µs a chunk, "
          f"{(med_on - med_off) / med_off * 100:.1f}% of the turn (target ≤ 10%)")


def serve(port: int, data_dir: str) -> None:
    import uvicorn

    from think.server import create_app

    app = create_app([Bench], runtime=EmbeddedRuntime(data_dir, idle_timeout=None))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio")


def process_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def bench_served(root: Path, turns: int) -> None:
    import socket
    import subprocess

    from think.client import AgentClient

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port), str(root / "served")])
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(400):  # until it listens (≤ 20 s)
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                await anyio.sleep(0.05)
        async with AgentClient.for_agent(base, "bench", "on-1", open_timeout=30) as on, \
                AgentClient.for_agent(base, "bench", "off-1", open_timeout=30) as off:
            cpu: dict[str, float] = {"on": 0.0, "off": 0.0}
            for client in (on, off):
                for i in range(5):  # warm up
                    assert (await (await client.send_chat(f"warm {i}"))).outcome == "completed"
            for round_ in range(turns // 5):  # interleaved, so machine noise hits both alike
                for label, client in (("on", on), ("off", off)):
                    c0 = process_cpu_seconds(server.pid)
                    for i in range(5):
                        turn = await (await client.send_chat(f"go {round_}.{i}"))
                        assert turn.outcome == "completed"
                    cpu[label] += process_cpu_seconds(server.pid) - c0
        chunks = DELTAS + 7
        count = turns // 5 * 5
        per_on, per_off = cpu["on"] / count * 1000, cpu["off"] / count * 1000
        print(f"\nserved: the server process's CPU for a turn of {chunks} chunks to one WebSocket client, "
              f"{count} turns each way:")
        print(f"  buffer off  {per_off:.2f} ms a turn")
        print(f"  buffer on   {per_on:.2f} ms a turn")
        print(f"  buffering   {(per_on - per_off) * 1000 / chunks:.2f} µs a chunk, "
              f"{(per_on - per_off) / per_off * 100:.1f}% of the turn (target ≤ 10%)")
    finally:
        server.terminate()
        server.wait(timeout=10)


async def main(chunks: int, turns: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="think-bench-resume-"))
    runtime = EmbeddedRuntime(root, idle_timeout=None)
    print(f"think resumable streams — python {sys.version.split()[0]}, data in {root}")
    await bench_replay(runtime, chunks)
    await bench_buffering(runtime, turns)
    await runtime.close()
    await bench_served(root, turns)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]), sys.argv[3])
        sys.exit()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--deltas", type=int, default=DELTAS)
    args = parser.parse_args()
    DELTAS = args.deltas
    anyio.run(main, args.chunks, args.turns)
