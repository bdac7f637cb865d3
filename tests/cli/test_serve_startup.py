"""`think serve` starts without importing what only some requests need: the real command, in a
fresh interpreter, serves `GET /`; the modules it had loaded are printed when it exits (on Ctrl-C)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]

DEFERRED = ("a2a.server", "a2a.types", "google.protobuf", "ag_ui")
"""Loaded on the first A2A / AG-UI request (think.ui_protocols.deferred), not to start serving."""

PROBE = ("import atexit, sys\n"
         f"loaded = lambda: ','.join(m for m in {DEFERRED!r} if m in sys.modules)\n"
         "atexit.register(lambda: print('loaded:' + loaded(), flush=True))\n"
         "from think.cli import main\n"
         "main()\n")


def test_serving_the_first_page_loads_no_protocol_sdk(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    command = [sys.executable, "-c", PROBE, "serve", "examples/assistant.py", "--port", str(port),
               "--data-dir", str(tmp_path / "data")]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"})
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, "think serve exited while starting"
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "think serve did not answer within 60 s"
                time.sleep(0.02)
        assert page.status_code == 200 and "<html" in page.text.lower()
    finally:
        process.send_signal(signal.SIGINT)  # uvicorn shuts down, then re-raises it: atexit runs
        out, _ = process.communicate(timeout=30)
    assert out.strip().splitlines()[-1] == "loaded:"  # none of DEFERRED
