"""MCP client figures: the framework's cost per tool call, and 20 stored servers at start.

    PYTHONPATH=. python bench/mcp_overhead.py [--calls 300] [--runs 5]

Prints:
* per-call time of the demo server's `echo` tool (`tests/mcp/demo_server.py`, a real SDK server
  in a subprocess) over streamable HTTP and over stdio: a direct SDK `Client.call_tool` (bare,
  and with the `subscriptions/listen` stream open that think keeps for list changes: it slows
  every call of the SDK over HTTP by itself), and the same call through the agent's tool
  (`demo_echo`: the connection's race against a drop, the timeout, the result conversion),
  medians of `--calls` calls, and the difference to the direct call with the stream open;
* an agent's start plus its first turn (a scripted model, no tool call) with no MCP servers and
  with 20 stored servers (reconnecting in the background to the same live server), medians of
  `--runs` fresh runtimes, and the difference; and when all 20 were ready (they connect
  `mcp_restore_delay` after the start, so that the first turn runs first).

Figures, not assertions: the machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.mcp.conftest import STDIO_ARGS, STDIO_COMMAND, env, start_demo_server  # noqa: E402
from think import Think  # noqa: E402
from think.runtime.embedded import EmbeddedRuntime  # noqa: E402
from think.testing import ScriptedModel  # noqa: E402
from think.tools.tool import ToolContext  # noqa: E402


class Bench(Think):
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(["ok"])


async def _median_call(call: Any, calls: int) -> float:
    for _ in range(20):  # warm-up
        await call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def call_overhead(calls: int, url: str) -> None:
    targets: list[tuple[str, str | StdioServerParameters, dict[str, Any]]] = [
        ("streamable HTTP", url, {"url": url}),
        ("stdio", StdioServerParameters(command=STDIO_COMMAND, args=STDIO_ARGS, env=env()),
         {"command": STDIO_COMMAND, "args": STDIO_ARGS, "env": env()}),
    ]
    for label, direct_target, add in targets:
        async with Client(direct_target) as client:
            bare = await _median_call(lambda c=client: c.call_tool("echo", {"text": "hi"}), calls)
            # think keeps a `subscriptions/listen` stream open for list changes; so does this one
            async with client.listen(tools_list_changed=True, prompts_list_changed=True,
                                     resources_list_changed=True):
                direct = await _median_call(lambda c=client: c.call_tool("echo", {"text": "hi"}), calls)
        with tempfile.TemporaryDirectory() as data:
            runtime = EmbeddedRuntime(data)
            async with runtime.lease(Bench, "calls") as agent:
                added = await agent.add_mcp_server("demo", **add)
                assert added["state"] == "ready", added
                tool = agent.mcp.tools()["demo_echo"]
                assert tool.execute is not None
                through = await _median_call(
                    lambda t=tool: t.execute({"text": "hi"}, ToolContext(tool_call_id="c", tool_name="demo_echo")),
                    calls)
            await runtime.close()
        print(f"{label:16s} direct SDK call {bare * 1e3:7.3f} ms, with a listen stream open {direct * 1e3:7.3f} ms   "
              f"through think {through * 1e3:7.3f} ms   added {(through - direct) * 1e3:+.3f} ms per call")


async def start_and_first_turn(data: Path, name: str) -> tuple[float, float, float]:
    """Seconds from the start to the end of the first turn (wall clock, and this process's CPU
    time: the disk's fsyncs on a shared machine make the first noisy), and to every stored
    server ready."""
    runtime = EmbeddedRuntime(data)
    started, cpu = time.perf_counter(), time.process_time()
    async with runtime.lease(Bench, name) as agent:
        result = await agent.chat("hello")
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert result.status == "completed"
        await _all_ready(agent)  # as they come up by themselves (not asking for them)
        ready = time.perf_counter() - started
    await runtime.close()
    return elapsed, cpu, ready


async def _all_ready(agent: Think) -> None:
    changed = anyio.Event()

    def poke() -> None:
        changed.set()

    unsubscribe = agent.mcp.subscribe(poke)
    try:
        with anyio.fail_after(120):
            while any(c.state != "ready" for c in agent.mcp.connections.values()):
                await changed.wait()
                changed = anyio.Event()
    finally:
        unsubscribe()


async def twenty_servers(runs: int, url: str) -> None:
    plain: list[float] = []
    loaded: list[float] = []
    ready: list[float] = []
    plain_cpu: list[float] = []
    loaded_cpu: list[float] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp)
            setup = EmbeddedRuntime(data)
            for name in ("plain", "loaded"):
                async with setup.lease(Bench, name) as agent:
                    await agent.chat("warm up")  # both databases exist and have a transcript
                    if name == "loaded":
                        for i in range(20):
                            await agent.add_mcp_server(f"s{i}", url, timeout=0)
            await setup.close()
            for name in ("plain", "loaded") if len(plain) % 2 else ("loaded", "plain"):  # alternating order
                turn, cpu, all_ready = await start_and_first_turn(data, name)
                (loaded if name == "loaded" else plain).append(turn)
                (loaded_cpu if name == "loaded" else plain_cpu).append(cpu)
                if name == "loaded":
                    ready.append(all_ready)
    p, loaded_median = statistics.median(plain), statistics.median(loaded)
    pc, lc = statistics.median(plain_cpu), statistics.median(loaded_cpu)
    print(f"start + first turn: no MCP servers {p * 1e3:.2f} ms   20 stored servers {loaded_median * 1e3:.2f} ms   "
          f"delay {(loaded_median - p) * 1e3:+.2f} ms; CPU {pc * 1e3:.2f} ms vs {lc * 1e3:.2f} ms, "
          f"{(lc - pc) * 1e3:+.2f} ms (medians of {runs}); all 20 ready "
          f"{statistics.median(ready) * 1e3:.0f} ms after the start")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--only", choices=["calls", "start"], default=None)
    parser.add_argument("--restore-delay", type=float, default=None,
                        help="the agent's mcp_restore_delay (0: servers connect at the start, as before 0.5 s)")
    args = parser.parse_args()
    if args.restore_delay is not None:
        Bench.mcp_restore_delay = args.restore_delay
    server = start_demo_server()
    try:
        if args.only != "start":
            await call_overhead(args.calls, server.url)
        if args.only != "calls":
            await twenty_servers(args.runs, server.url)
    finally:
        server.kill()


if __name__ == "__main__":
    anyio.run(main)
