"""SIGKILL a standalone harness while its operation's tool runs: the operation was stored before
`submit` acknowledged it, and a new harness on the same data answers it once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]


def _start(data: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.harness.harness_process", str(data), mode], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _session_process(data: Path, mode: str) -> Any:
    """Run `tests.harness.session_process` to its end; what it printed last, decoded."""
    done = subprocess.run([sys.executable, "-m", "tests.harness.session_process", str(data), mode], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60,
                          check=True)
    return orjson.loads(done.stdout.strip().splitlines()[-1])


def _kill_once_its_tool_runs(process: subprocess.Popen[Any], data: Path) -> None:
    """SIGKILL `process` as soon as its tool has logged to DATA/calls.txt (it is killed and reaped
    whatever happens)."""
    try:
        calls = data / "calls.txt"
        deadline = time.monotonic() + 30
        while not calls.exists():  # the other process writes it when its tool runs
            assert process.poll() is None, "the harness process died"
            assert time.monotonic() < deadline, "the tool never ran"
            time.sleep(0.02)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)


def test_a_killed_harness_answers_its_operation_after_a_restart(tmp_path: Path) -> None:
    first = _start(tmp_path, "submit")
    try:
        assert first.stdout is not None
        ack = orjson.loads(first.stdout.readline())  # printed once `submit` returned
        assert ack == {"operation_id": "op-plan", "session": "", "accepted": True, "ignored_tools": []}
    finally:
        _kill_once_its_tool_runs(first, tmp_path)
    calls = tmp_path / "calls.txt"
    second = _start(tmp_path, "wait")
    out, _ = second.communicate(timeout=90)
    answer = orjson.loads(out.strip().splitlines()[-1])
    assert answer["status"] == "done" and answer["text"] == "Plan done after an interruption."
    assert answer["messages"] == ["user: plan the release", "assistant: Plan done after an interruption."]
    assert calls.read_text() == "tool\n"  # the cut-off call was reported, not run again


def test_a_sessions_in_flight_stream_survives_a_kill(tmp_path: Path) -> None:
    """A session other than the root: its running turn's chunks are in storage, so after a
    SIGKILL mid-turn a new process's `in_flight()` shows them, marked orphaned."""
    first = subprocess.Popen([sys.executable, "-m", "tests.harness.session_process", str(tmp_path), "run"],
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    _kill_once_its_tool_runs(first, tmp_path)
    seen = _session_process(tmp_path, "inspect")
    flight = seen["work"]
    assert flight is not None and flight["orphaned"] is True
    said = "".join(c.get("delta", "") for c in flight["chunks"] if c["type"] == "text-delta")
    assert said == "Working on it."
    assert [c["toolName"] for c in flight["chunks"] if c["type"] == "tool-input-available"] == ["long_task"]
    assert seen["root"] is False and seen["messages"] == ["user: start the long task"]
    # deleting the session drops what the killed turn left of its stream
    assert _session_process(tmp_path, "delete") == {"streams": 0, "chunks": 0}
