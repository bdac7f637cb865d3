"""CPU of a chat turn with tracing off and on: the cost of think's OpenTelemetry instrumentation.

    python bench/tracing.py [--turns 600] [--block 20]

A one-tool turn (user → tool call → tool → text) with an instant scripted model and real SQLite
persistence, in two fresh interpreters (a process installs OpenTelemetry providers only once):

* without a provider, blocks of `--block` turns alternate between `bare` (think.observe's helpers
  replaced by do-nothing context managers: no instrumentation at all) and `off` (the default:
  each helper checks for a provider and does nothing);
* with the SDK's tracer provider (a batch processor, a no-op exporter) and a meter provider (a
  reader that never exports), blocks alternate between `bare`, `on`, and `on+content` (message
  content recorded too).

Alternating blocks in one process makes the comparison fair on a shared, noisy machine. CPU is
the process's (`time.process_time`: the batch processor's thread included). Prints the median
CPU milliseconds per turn of each mode and its overhead over the same process's `bare` (targets:
off ≤ 5 %, on ≤ 20 %). Figures, not assertions.

    python bench/tracing.py --instructions [--turns 100]

counts instructions instead (`valgrind --tool=callgrind`, every thread of the process): each mode
in an interpreter of its own under valgrind, counting only its `--turns` measured turns (and, with
the SDK, the batch processor exporting their spans). A count does not depend on how busy the
machine is (string hashing is fixed with PYTHONHASHSEED=0, and what the process holds after its
warm-up is frozen out of the garbage collector: a rare full collection, whose cost depends on
everything in the process rather than on the turn, would otherwise land in one mode's count and
not another's): the same code gives nearly the same figure run after run. A last line, `sdk
alone`, counts what the SDK itself costs for the same spans and measurements made directly, with
no turn around them, and so what think's own layer adds.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODES = ("bare", "off", "on", "on+content", "sdk alone")


def _null(*args: Any, **kwargs: Any) -> Any:
    from think.observe.spans import NOTHING  # enters as itself and does nothing: the cheapest stand-in

    return NOTHING


HELPERS = ("turn", "model_call", "tool_call", "recovery", "submission", "sub_agent", "agent_active")


def _helpers() -> tuple[dict[str, Any], dict[str, Any]]:
    """think.observe's real helpers, and do-nothing stand-ins."""
    import think.observe as observe

    real = {name: getattr(observe, name) for name in HELPERS}
    bare: dict[str, Any] = {name: _null for name in HELPERS}
    bare["agent_active"] = lambda *a, **k: None
    return real, bare


def _install_sdk() -> None:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Discard(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard()))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))


def _callgrind(on: bool) -> None:
    """Switch callgrind's counting on or off for this process (it waits until valgrind has)."""
    subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(os.getpid())], check=True,
                   capture_output=True)


def _sdk_alone(turns: int) -> None:
    """What a traced one-tool turn asks of the SDK, made on it directly, with no turn around it:
    the same four spans (turn, two model calls, the tool call: names, attributes at start and at
    end, each made current while it runs) and the same three measurements, `turns` times,
    counted by callgrind. The part of `on` that no instrumentation of the SDK can avoid."""
    from opentelemetry import metrics, trace
    from opentelemetry.context import attach, detach
    from opentelemetry.trace import set_span_in_context

    _install_sdk()
    tracer = trace.get_tracer_provider().get_tracer("think")
    meter = metrics.get_meter_provider().get_meter("think")
    durations = meter.create_histogram("think.turn.duration", unit="s")
    tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}")
    turn_at_start = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench", "gen_ai.agent.id": "a1",
                     "gen_ai.conversation.id": "bench/a1", "think.request_id": "r1", "think.continuation": False}
    chat_at_start = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted"}
    tool_at_start = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                     "gen_ai.tool.call.id": "call_1", "gen_ai.tool.type": "function"}
    usage = {"gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 9}
    by_turn = {"gen_ai.agent.name": "bench", "think.turn.outcome": "completed"}
    by_input = {**chat_at_start, "gen_ai.token.type": "input"}
    by_output = {**chat_at_start, "gen_ai.token.type": "output"}

    def span(name: str, at_start: dict[str, Any], at_end: dict[str, Any] | None) -> None:
        made = tracer.start_span(name, None, attributes=at_start)
        token = attach(set_span_in_context(made))
        if at_end:
            made.set_attributes(at_end)
        detach(token)
        made.end()

    def turn() -> None:
        made = tracer.start_span("invoke_agent bench", None, attributes=turn_at_start)
        token = attach(set_span_in_context(made))
        span("chat scripted", chat_at_start.copy(), {"gen_ai.response.finish_reasons": ("tool_calls",), **usage})
        span("execute_tool lookup", tool_at_start, None)
        span("chat scripted", chat_at_start.copy(), {"gen_ai.response.finish_reasons": ("stop",), **usage})
        made.set_attributes({"think.turn.outcome": "completed", **usage})
        detach(token)
        made.end()
        durations.record(0.001, by_turn)
        tokens.record(24, by_input)
        tokens.record(18, by_output)

    for _ in range(200):  # warm up
        turn()
    gc.collect()
    gc.freeze()
    _callgrind(True)
    for _ in range(turns):
        turn()
    trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]
    _callgrind(False)


def _measure(process: str, turns: int, block: int, counted: str | None = None) -> dict[str, float]:
    import anyio

    import think.observe as observe
    from think import Think, tool
    from think.runtime import EmbeddedRuntime
    from think.testing.models import ScriptedModel, call

    if process == "sdk":
        _install_sdk()
    modes = ("bare", "off") if process == "plain" else ("bare", "on", "on+content")
    if counted is not None:  # under callgrind: this one mode, its turns counted
        modes = (counted,)
    real, bare = _helpers()

    def use(mode: str) -> None:
        for name, helper in (bare if mode == "bare" else real).items():
            setattr(observe, name, helper)
        observe.set_capture_content(mode == "on+content")

    @tool
    def lookup(city: str) -> dict[str, object]:
        """Look up the weather in a city."""
        return {"city": city, "temperature": 21, "sky": "clear"}

    def reply(request: Any) -> Any:
        if request.messages and request.messages[-1].role == "tool":
            return "It is 21 degrees and clear in Lisbon today."
        return [call("lookup", city="Lisbon")]

    model = ScriptedModel(reply)

    class Bench(Think):
        def get_model(self) -> ScriptedModel:
            return model

        def get_tools(self) -> list[object]:
            return [lookup]

    async def run() -> dict[str, list[float]]:
        cpu: dict[str, list[float]] = {mode: [] for mode in modes}
        with tempfile.TemporaryDirectory() as data:
            runtime = EmbeddedRuntime(data, idle_timeout=None)
            for mode in modes:  # warm up: imports, the price table, the schema image
                use(mode)
                for i in range(10):
                    agent = await runtime.get(Bench, f"warm{i}")
                    await agent.save_messages(["Weather in Lisbon?"])
            n = 0
            if counted is not None:
                for i in range(50):  # the conversations exist before counting starts
                    await (await runtime.get(Bench, f"a{i}")).save_messages(["Weather in Lisbon?"])
                gc.collect()
                gc.freeze()
                _callgrind(True)
                for n in range(turns):
                    agent = await runtime.get(Bench, f"a{n % 50}")
                    await agent.save_messages(["Weather in Lisbon?"])
                if process == "sdk":  # the spans' export is part of the cost
                    from opentelemetry import trace

                    trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]
                _callgrind(False)
                await runtime.close()
                return cpu
            while min(len(v) for v in cpu.values()) < turns:
                for mode in modes:
                    use(mode)
                    for _ in range(block):
                        agent = await runtime.get(Bench, f"a{n % 50}")  # conversations stay short
                        n += 1
                        started = time.process_time()
                        await agent.save_messages(["Weather in Lisbon?"])
                        cpu[mode].append(time.process_time() - started)
                if n % 1000 < len(modes) * block:
                    for i in range(50):  # keep every conversation short
                        await (await runtime.get(Bench, f"a{i}")).clear_messages()
            await runtime.close()
        return cpu

    cpu = anyio.run(run)
    if counted is not None:
        return {}
    return {mode: statistics.median(values) * 1000 for mode, values in cpu.items()}


def _instructions(turns: int) -> None:
    """Each mode's instructions per turn, counted by callgrind in a fresh interpreter."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("--instructions needs valgrind (Debian's valgrind package): not found")
        return
    print(f"instructions per one-tool turn (valgrind --tool=callgrind, {turns} turns per mode, all threads)")
    counts: dict[str, float] = {}
    for process, mode in (("plain", "bare"), ("plain", "off"), ("sdk", "on"), ("sdk", "on+content"),
                          ("sdk", "sdk alone")):
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch) / "callgrind.out"
            subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                            sys.executable, __file__, "--process", process, "--count", mode, "--turns", str(turns)],
                           cwd=ROOT, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "0"})  # str hashes: the same every run
            totals = [line for line in out.read_text().splitlines() if line.startswith("totals:")]
            counts[mode] = int(totals[0].split()[1]) / turns
        if mode == "sdk alone":
            share, layer = counts[mode] / counts["bare"] * 100, counts["on"] - counts["bare"] - counts[mode]
            print(f"    {mode:<11} {counts[mode] / 1e6:7.3f} M  (= {share:.1f} % of bare: the SDK's own cost of "
                  "on's spans and measurements)")
            print(f"    think's own layer in on: {layer / 1e6:.3f} M ({layer / counts['bare'] * 100:+.1f} % of bare)")
            continue
        extra = "" if mode == "bare" else f"  ({(counts[mode] / counts['bare'] - 1) * 100:+.1f} % over bare)"
        print(f"    {mode:<11} {counts[mode] / 1e6:7.3f} M{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, help="turns per mode (default 600, 100 with --instructions)")
    parser.add_argument("--block", type=int, default=20, help="turns in a row in one mode")
    parser.add_argument("--instructions", action="store_true", help="count instructions under valgrind instead")
    parser.add_argument("--process", choices=("plain", "sdk"), help=argparse.SUPPRESS)
    parser.add_argument("--count", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.turns is None:
        args.turns = 100 if args.instructions else 600
    if args.count == "sdk alone":
        _sdk_alone(args.turns)
        return
    if args.process:
        print(json.dumps(_measure(args.process, args.turns, args.block, args.count)))
        return
    if args.instructions:
        _instructions(args.turns)
        return
    print(f"CPU per one-tool turn, median of {args.turns} turns per mode (blocks of {args.block}, alternating)")
    for process, label in (("plain", "no provider"), ("sdk", "SDK, no-op exporter")):
        out = subprocess.run([sys.executable, __file__, "--process", process, "--turns", str(args.turns), "--block",
                              str(args.block)], cwd=ROOT, capture_output=True, text=True, check=True)
        figures = json.loads(out.stdout)
        print(f"  {label}:")
        for mode, value in figures.items():
            extra = "" if mode == "bare" else f"  ({(value / figures['bare'] - 1) * 100:+.1f} % over bare)"
            print(f"    {mode:<11} {value:7.3f} ms{extra}")


if __name__ == "__main__":
    main()
