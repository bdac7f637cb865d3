"""Workspace figures: the `bash` tool's round trip over 100 files, and `grep` over 1,000 files.

A bash round trip is one whole tool call: snapshot the workspace into a fresh sandbox root (a
tmpfs as root), run `bash -c` under bubblewrap, diff the root and write the changes back. The
script reads one file and appends to another, so every run writes one file back. `grep` runs the
tool over 1,000 small Python-like files (about 40 lines each) in an agent database on disk.

    python bench/workspace.py [--runs 30]

Target: bash round trip at most 100 ms (median) for a workspace of 100 files.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from think.sandbox.bash import run_bash  # noqa: E402
from think.storage import Database, migrate  # noqa: E402
from think.tools import ToolContext, run_tool  # noqa: E402
from think.workspace import MIGRATIONS, Workspace, create_grep_tool  # noqa: E402

TARGET_MS = 100.0


def source_file(i: int) -> bytes:
    lines = [f"# module {i}", "import os", ""]
    for j in range(12):
        lines += [f"def handler_{j}(event):", f"    value = event.get('key_{j}')", f"    return value or {i * j}"]
    lines.append("TODO = 'find me'" if i % 50 == 0 else "DONE = True")
    return "\n".join(lines).encode()


async def make_workspace(directory: str, files: int) -> Workspace:
    db = Database(Path(directory) / "agent.db")
    migrate(db, MIGRATIONS)
    ws = Workspace(db)
    await ws.apply(writes={f"/src/pkg{i % 10}/mod_{i:04}.py": source_file(i) for i in range(files)})
    return ws


def summary(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    return (f"median {statistics.median(ms):6.1f} ms   min {ms[0]:6.1f}   p90 {ms[int(len(ms) * 0.9) - 1]:6.1f}"
            f"   ({len(ms)} runs)")


async def bench_bash(runs: int) -> float:
    with tempfile.TemporaryDirectory() as directory:
        ws = await make_workspace(directory, 100)
        script = "cat src/pkg1/mod_0001.py > /dev/null; echo '# touched' >> src/pkg2/mod_0002.py"
        first = await run_bash(ws, script)
        assert first["exitCode"] == 0 and first["changedFiles"]["updated"] == ["/src/pkg2/mod_0002.py"], first
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            out = await run_bash(ws, script)
            samples.append(time.perf_counter() - started)
            assert out["exitCode"] == 0, out
        empty = []
        for _ in range(max(5, runs // 3)):
            started = time.perf_counter()
            await run_bash(Workspace(Database(":memory:")), "true")
            empty.append(time.perf_counter() - started)
    print(f"bash round trip, 100 files    {summary(samples)}")
    print(f"bash round trip, empty        {summary(empty)}")
    return statistics.median(samples) * 1000


async def bench_grep(runs: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        ws = await make_workspace(directory, 1000)
        grep = create_grep_tool(ops=ws)
        ctx = ToolContext(tool_call_id="g", tool_name="grep")
        for label, arguments in (("regex", {"query": r"def handler_\d+\(event\)", "include": "**/*.py"}),
                                 ("fixed, 20 hits", {"query": "find me", "fixedString": True}),
                                 ("no hits", {"query": "nowhere to be found"})):
            samples = []
            for _ in range(runs):
                started = time.perf_counter()
                result = await run_tool(grep, grep.check_input(arguments), ctx)
                samples.append(time.perf_counter() - started)
            out = result.output
            print(f"grep 1,000 files ({label:14}) {summary(samples)}   searched {out['filesSearched']}, "
                  f"matches {out['totalMatches']}")


async def main(runs: int) -> int:
    median = await bench_bash(runs)
    await bench_grep(max(5, runs // 3))
    verdict = "ok" if median <= TARGET_MS else "OVER TARGET"
    print(f"target: bash round trip <= {TARGET_MS:.0f} ms median for 100 files: {verdict}")
    return 0 if median <= TARGET_MS else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    raise SystemExit(anyio.run(main, parser.parse_args().runs))
