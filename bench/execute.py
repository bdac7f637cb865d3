"""The sandbox host's costs: an execution with one host call, and the overhead per host call.

    python bench/execute.py [--runs 200] [--calls 2000] [--worker-binary PATH]

Prints medians (milliseconds / microseconds):
* the first execution in the process (the worker pool starts: one Monty worker spawned);
* a cold execution with one host call: a fresh interpreter session from the warm pool, the
  namespace prelude, the code, one host call (the journal kept in memory);
* the same through the `execute` runtime: the execution row and its journal written to SQLite;
* host-call overhead: (a run making `--calls` calls − a run making none) / `--calls`, and the
  same for a bare Monty session answering a constant (the part that is Monty's IPC round trip);
* the same through the `execute` runtime (each call journalled in SQLite), for a call a crash
  must not repeat (marked as running, then its result: two writes) and for a `rerun` one (one).

`--worker-binary` measures another worker (e.g. a hardened wrapper). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pydantic_monty as monty

from think.sandbox.host import HostFunction, HostLimits, SandboxHost, worker_pool
from think.storage.database import Database
from think.storage.migrations import migrate
from think.tools.execute.namespaces import Provider
from think.tools.execute.runtime import ExecuteRuntime
from think.tools.execute.store import MIGRATIONS, ExecutionStore


async def echo(args: dict[str, Any]) -> Any:
    return args.get("x", 0)


NS = {"tools": {"echo": HostFunction(echo, ("x",))}}


async def timed(host: SandboxHost, code: str) -> float:
    started = time.perf_counter()
    out = await host.run(code, NS)
    assert out.status == "completed", out.error
    return time.perf_counter() - started


async def main(runs: int, calls: int, binary: str | None) -> None:
    host = SandboxHost(HostLimits(timeout=60, max_host_calls=calls + 10), binary=binary)
    first = await timed(host, "tools.echo(x=1)")
    one = [await timed(host, "tools.echo(x=1)") for _ in range(runs)]
    with tempfile.TemporaryDirectory() as scratch:
        db = Database(Path(scratch) / "bench.db")
        migrate(db, MIGRATIONS)
        runtime = ExecuteRuntime(ExecutionStore(db), host, tools=dict, workspace=None,
                                 providers=(Provider("bench", {"echo": lambda x: x}),
                                            Provider("again", {"echo": HostFunction(echo, ("x",), rerun=True)})))
        stored = []
        for _ in range(runs):
            started = time.perf_counter()
            result = await runtime.run("bench.echo(x=1)")
            assert result["ok"], result
            stored.append(time.perf_counter() - started)
        n = max(50, calls // 10)
        stored_call: dict[str, list[float]] = {"bench": [], "again": []}
        for _ in range(max(3, runs // 20)):
            empty_run = await _timed_run(runtime, f"for i in range({n}):\n    i")
            for ns in stored_call:
                stored_call[ns].append((await _timed_run(runtime, f"for i in range({n}):\n    {ns}.echo(x=i)")
                                        - empty_run) / n)
        db.close()
    raw = []
    for _ in range(max(3, runs // 20)):
        raw.append(await raw_monty(calls, binary))
    loop = f"for i in range({calls}):\n    tools.echo(x=i)"
    empty = f"for i in range({calls}):\n    i"
    per_call = []
    for _ in range(max(3, runs // 20)):
        per_call.append((await timed(host, loop) - await timed(host, empty)) / calls)
    ms = 1000.0
    print(f"first execution (pool start)        {first * ms:8.2f} ms")
    print(f"execution with one host call        {statistics.median(one) * ms:8.3f} ms  (median of {runs})")
    print(f"the same, stored (execute runtime)  {statistics.median(stored) * ms:8.3f} ms  (execution row and "
          "journal in SQLite)")
    print(f"host-call overhead                  {statistics.median(per_call) * 1e6:8.1f} µs per call  "
          f"({calls} calls)")
    print(f"host-call overhead, stored          {statistics.median(stored_call['bench']) * 1e6:8.1f} µs per call  "
          "(the running marker and the result written to SQLite: a call a crash must not repeat)")
    print(f"  a call that may be made again     {statistics.median(stored_call['again']) * 1e6:8.1f} µs per call  "
          "(`rerun`: only the result written)")
    print(f"  of which Monty's own round trip   {statistics.median(raw) * 1e6:8.1f} µs per call  "
          "(an external call answered with a constant, no think code)")


async def _timed_run(runtime: ExecuteRuntime, code: str) -> float:
    started = time.perf_counter()
    result = await runtime.run(code)
    assert result["ok"], result
    return time.perf_counter() - started


async def raw_monty(calls: int, binary: str | None) -> float:
    """Seconds per external call of a bare Monty session: the floor under the host's overhead."""
    pool = await worker_pool(binary)
    async with pool.checkout(limits={"max_suspensions": calls + 10}) as session:
        started = time.perf_counter()
        step = await session.feed_start(f"for i in range({calls}):\n    f(i)")
        while not isinstance(step, monty.MontyComplete):
            assert isinstance(step, monty.AsyncFunctionSnapshot)
            step = await step.resume({"return_value": 1})
        return (time.perf_counter() - started) / calls


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--worker-binary", default=None)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.calls, args.worker_binary))
