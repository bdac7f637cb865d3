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
  `--runs` fresh runtimes, and the difference.

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


async def start_and_first_turn(data: Path, name: str) -> float:
    runtime = EmbeddedRuntime(data)
    started = time.perf_counter()
    async with runtime.lease(Bench, name) as agent:
        result = await agent.chat("hello")
        elapsed = time.perf_counter() - started
        assert result.status == "completed"
    await runtime.close()
    return elapsed


async def twenty_servers(runs: int, url: str) -> None:
    plain, loaded = [], []
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
            plain.append(await start_and_first_turn(data, "plain"))
            loaded.append(await start_and_first_turn(data, "loaded"))
    p, loaded_median = statistics.median(plain), statistics.median(loaded)
    print(f"start + first turn: no MCP servers {p * 1e3:.2f} ms   20 stored servers {loaded_median * 1e3:.2f} ms   "
          f"delay {(loaded_median - p) * 1e3:+.2f} ms (median of {runs})")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    server = start_demo_server()
    try:
        await call_overhead(args.calls, server.url)
        await twenty_servers(args.runs, server.url)
    finally:
        server.kill()


if __name__ == "__main__":
    anyio.run(main)
