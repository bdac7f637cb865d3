"""Client CPU per streamed delta for the built-in model adapters, against the local fake server.

The fake server (`tests/models/fake_llm_server.py`) runs in its own process, so only the
adapter's CPU is counted (`time.process_time` of this process). For each adapter, a round
streams a reply of N=20 text deltas several times and one of N=2000 deltas; the cost of one delta
is the difference divided by the 1,980 extra deltas, so the fixed cost of a request (connection,
headers, the request body) cancels out. The table shows the median of the rounds.

    python bench/model_stream.py [--rounds 7] [--loop asyncio|uvloop|both]

Target: at most 20 µs per delta.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from think.models.anthropic import AnthropicModel  # noqa: E402
from think.models.base import Model, ModelRequest, TextContent, UserMessage  # noqa: E402
from think.models.events import Finish, TextDelta  # noqa: E402
from think.models.openai_compat import OpenAICompatibleModel  # noqa: E402

FEW, MANY = 20, 2000
FEW_REPEATS = 10
TARGET_US = 20.0
REQUEST = ModelRequest(system="Be brief.", messages=(UserMessage((TextContent("Count to a lot."),)),))


@dataclass(frozen=True)
class Result:
    adapter: str
    loop: str
    few_ms: float
    many_ms: float
    per_delta_us: list[float]


async def stream_cpu(model: Model, expected: int) -> float:
    """CPU seconds spent by this process streaming one reply; checks the reply is whole."""
    deltas = 0
    started = time.process_time()
    async for event in model.stream(REQUEST):
        if isinstance(event, TextDelta):
            deltas += 1
        elif isinstance(event, Finish) and event.reason != "stop":
            raise RuntimeError(f"the stream failed: {event}")
    spent = time.process_time() - started
    if deltas != expected:
        raise RuntimeError(f"expected {expected} deltas, got {deltas}")
    return spent


async def measure(name: str, make: Callable[[str], Any], loop: str, rounds: int) -> Result:
    few_model, many_model = make(f"bench-{FEW}"), make(f"bench-{MANY}")
    for _ in range(3):  # warm up: connections, caches, the server's prepared replies
        await stream_cpu(few_model, FEW)
        await stream_cpu(many_model, MANY)
    few_all: list[float] = []
    many_all: list[float] = []
    per_delta: list[float] = []
    for _ in range(rounds):
        few = statistics.mean([await stream_cpu(few_model, FEW) for _ in range(FEW_REPEATS)])
        many = await stream_cpu(many_model, MANY)
        few_all.append(few)
        many_all.append(many)
        per_delta.append((many - few) / (MANY - FEW) * 1e6)
    await few_model.aclose()
    await many_model.aclose()
    return Result(name, loop, statistics.median(few_all) * 1e3, statistics.median(many_all) * 1e3, per_delta)


async def run_all(base_url: str, loop: str, rounds: int) -> list[Result]:
    adapters: dict[str, Callable[[str], Any]] = {
        "OpenAI-compatible": lambda model: OpenAICompatibleModel(model, base_url=f"{base_url}/v1", api_key="k"),
        "Anthropic": lambda model: AnthropicModel(model, api_key="k", base_url=base_url),
    }
    return [await measure(name, make, loop, rounds) for name, make in adapters.items()]


def run(loop: str, main: Coroutine[Any, Any, list[Result]]) -> list[Result]:
    if loop == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--loop", choices=["asyncio", "uvloop", "both"], default="both")
    options = parser.parse_args()
    loops = ["asyncio", "uvloop"] if options.loop == "both" else [options.loop]

    server = subprocess.Popen(
        [sys.executable, "-m", "tests.models.fake_llm_server"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the fake server did not start: {line!r}")
        base_url = f"http://127.0.0.1:{int(line.split()[1])}"
        results = [result for loop in loops for result in run(loop, run_all(base_url, loop, options.rounds))]
    finally:
        if server.stdin is not None:
            server.stdin.close()  # the server stops when its standard input closes
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()

    print(f"Client CPU per streamed text delta (median of {options.rounds} rounds; "
          f"N={FEW} and N={MANY} deltas; fake server in another process)\n")
    columns = f"{'step, 20 deltas':>16} {'step, 2000 deltas':>18} {'µs/delta':>9} {'range':>13}"
    header = f"{'adapter':<18} {'loop':<8} {columns}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    for r in results:
        median = statistics.median(r.per_delta_us)
        worst = max(worst, median)
        spread = f"{min(r.per_delta_us):.1f}–{max(r.per_delta_us):.1f}"
        print(f"{r.adapter:<18} {r.loop:<8} {r.few_ms:>13.2f} ms {r.many_ms:>15.2f} ms {median:>9.1f} {spread:>13}")
    verdict = "within" if worst <= TARGET_US else "OVER"
    print(f"\nTarget ≤ {TARGET_US:.0f} µs per delta: {verdict} (worst median {worst:.1f} µs).")


if __name__ == "__main__":
    main()
