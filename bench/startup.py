"""Start-up cost: `import think`, and `think serve` until it answers HTTP.

    python bench/startup.py [--runs 7]

Prints, as the median of `--runs` fresh interpreters each:
* `import think` wall seconds measured inside the interpreter (its start-up excluded), and the
  cumulative figure `python -X importtime` reports for `think`;
* `from think import Think` the same way (the agent and what a turn needs; `import think` alone
  loads nothing until a name is used);
* `think serve examples/assistant.py` seconds from spawning the process until `GET /` answers,
  the CPU seconds the process had used by then (user + system, from `/proc`: less noisy than wall
  time on a loaded machine), and how many modules it had imported (one more run under
  `-X importtime`).

Figures, not assertions (the machines are shared and noisy). The subprocesses inherit this
environment, so `PYTHONPATH=.` measures the working tree's `think` — except
`PYTHONDONTWRITEBYTECODE`, which is dropped: an installed package has its bytecode cached, and
compiling every module on each start would be measured otherwise (one warm-up run writes it).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
TIMED = "import time; t = time.perf_counter(); {}; print(time.perf_counter() - t)"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def import_seconds(statement: str = "import think") -> float:
    out = subprocess.run([sys.executable, "-c", TIMED.format(statement)], capture_output=True, text=True,
                         check=True, cwd=ROOT, env=ENV)
    return float(out.stdout.strip())


def importtime_seconds() -> float:
    """The cumulative microseconds `-X importtime` gives the `think` package itself."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import think"], capture_output=True,
                         text=True, check=True, cwd=ROOT, env=ENV)
    for line in out.stderr.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) == 3 and fields[2] == "think":
            return int(fields[1]) / 1e6
    raise RuntimeError("no `think` line in the -X importtime output")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux `/proc`; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_ready_seconds(data_dir: Path, deadline: float = 30.0, *, flags: tuple[str, ...] = (),
                        stderr: int | IO[bytes] = subprocess.DEVNULL) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of `think serve` from spawning it until `GET /` answers."""
    port = free_port()
    command = [sys.executable, *flags, "-c", "from think.cli import main; main()", "serve",
               "examples/assistant.py", "--port", str(port), "--data-dir", str(data_dir), "--no-ui"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, env=ENV)
    try:
        while time.perf_counter() - t0 < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"think serve exited with {proc.returncode}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).close()
            except urllib.error.HTTPError:
                pass  # any HTTP answer means it serves
            except OSError:
                time.sleep(0.005)  # polling for the port to open, not waiting out a guess
                continue
            return time.perf_counter() - t0, cpu_seconds(proc.pid)
        raise RuntimeError("think serve did not answer in time")
    finally:
        proc.terminate()
        proc.wait(10)


def main(runs: int) -> None:
    print(f"think start-up — python {sys.version.split()[0]}, median of {runs} fresh processes")
    with tempfile.TemporaryDirectory(prefix="think-startup-") as tmp:
        serve_ready_seconds(Path(tmp) / "warm-up")  # writes the bytecode caches
    imports = [import_seconds() for _ in range(runs)]
    print(f"  import think (in-process)     {statistics.median(imports):.3f} s   min {min(imports):.3f} s"
          "  (target ≤ 0.2 s)")
    cumulative = [importtime_seconds() for _ in range(runs)]
    print(f"  import think (-X importtime)  {statistics.median(cumulative):.3f} s   min {min(cumulative):.3f} s")
    agent = [import_seconds("from think import Think") for _ in range(runs)]
    print(f"  from think import Think       {statistics.median(agent):.3f} s   min {min(agent):.3f} s")
    with tempfile.TemporaryDirectory(prefix="think-startup-") as tmp:
        ready = [serve_ready_seconds(Path(tmp) / f"data-{i}") for i in range(runs)]
        with open(Path(tmp) / "importtime.txt", "wb") as log:
            serve_ready_seconds(Path(tmp) / "counted", flags=("-X", "importtime"), stderr=log)
        modules = sum(line.startswith("import time:") and "| cumulative |" not in line
                      for line in (Path(tmp) / "importtime.txt").read_text().splitlines())
    wall, cpu = [w for w, _ in ready], [c for _, c in ready]
    print(f"  think serve ready             {statistics.median(wall):.3f} s   min {min(wall):.3f} s"
          "  (target ≤ 1 s)")
    print(f"  think serve CPU until ready   {statistics.median(cpu):.3f} s   min {min(cpu):.3f} s"
          f"   {modules} modules imported")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    main(parser.parse_args().runs)
