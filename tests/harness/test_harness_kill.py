"""SIGKILL a standalone harness while its operation's tool runs: the operation was stored before
`submit` acknowledged it, and a new harness on the same data answers it once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]


def _start(data: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.harness.harness_process", str(data), mode], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_killed_harness_answers_its_operation_after_a_restart(tmp_path: Path) -> None:
    first = _start(tmp_path, "submit")
    try:
        assert first.stdout is not None
        ack = orjson.loads(first.stdout.readline())  # printed once `submit` returned
        assert ack == {"operation_id": "op-plan", "session": "", "accepted": True, "ignored_tools": []}
        calls = tmp_path / "calls.txt"
        deadline = time.monotonic() + 30
        while not calls.exists():  # the other process writes it when its tool runs
            assert first.poll() is None, "the harness process died"
            assert time.monotonic() < deadline, "the tool never ran"
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
    finally:
        first.wait(timeout=10)
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
    try:
        calls = tmp_path / "calls.txt"
        deadline = time.monotonic() + 30
        while not calls.exists():  # the other process writes it when its tool runs
            assert first.poll() is None, "the harness process died"
            assert time.monotonic() < deadline, "the tool never ran"
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
    finally:
        first.wait(timeout=10)
    second = subprocess.run([sys.executable, "-m", "tests.harness.session_process", str(tmp_path), "inspect"],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                            timeout=60, check=True)
    seen = orjson.loads(second.stdout.strip().splitlines()[-1])
    flight = seen["work"]
    assert flight is not None and flight["orphaned"] is True
    said = "".join(c.get("delta", "") for c in flight["chunks"] if c["type"] == "text-delta")
    assert said == "Working on it."
    assert [c["toolName"] for c in flight["chunks"] if c["type"] == "tool-input-available"] == ["long_task"]
    assert seen["root"] is False and seen["messages"] == ["user: start the long task"]
    # deleting the session drops what the killed turn left of its stream
    third = subprocess.run([sys.executable, "-m", "tests.harness.session_process", str(tmp_path), "delete"],
                           cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                           timeout=60, check=True)
    assert orjson.loads(third.stdout.strip().splitlines()[-1]) == {"streams": 0, "chunks": 0}
