"""One process per data directory: a second live process cannot open an agent the first owns.

Real processes: `think serve` subprocesses and `open_agent` scripts in fresh interpreters, one of
them killed with SIGKILL (the kernel must drop its lock: nothing stale is left behind).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from tests.runtime.owner_agents import Ledger
from think import DataDirInUse, EmbeddedRuntime, open_agent
from think.runtime import ownership

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "TERM": "dumb"}
THINK_SERVE = [sys.executable, "-m", "think.cli", "serve", "tests.runtime.owner_agents:Ledger", "--no-ui"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.url = f"http://127.0.0.1:{port}/agents/ledger"

    def hit(self, name: str) -> dict[str, int]:
        response = httpx.get(f"{self.url}/{name}", timeout=10)
        response.raise_for_status()
        found: dict[str, int] = response.json()
        return found

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)


@contextmanager
def think_serve(data: Path) -> Iterator[Served]:
    """A real `think serve` subprocess on `data`, up once it answers HTTP."""
    port = _free_port()
    process = subprocess.Popen([*THINK_SERVE, "--data-dir", str(data), "--port", str(port)], cwd=ROOT, env=ENV,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    served = Served(process, port)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(f"think serve exited while starting: {process.communicate()[1]}")
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "think serve did not start within 30 s"
                time.sleep(0.05)
        yield served
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)
        process.communicate()


def _open_in_a_new_process(data: Path, name: str) -> str:
    """`open_agent` in a fresh interpreter: "hits N" if it opened, else the error it got."""
    script = (
        "import anyio\n"
        "from think import DataDirInUse, open_agent\n"
        "from tests.runtime.owner_agents import Ledger\n"
        "async def main():\n"
        "    try:\n"
        f"        async with open_agent(Ledger, {name!r}, data_dir={str(data)!r}) as agent:\n"
        "            print('hits', agent.hits())\n"
        "    except DataDirInUse as exc:\n"
        "        print('DataDirInUse:', exc)\n"
        "anyio.run(main)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=ENV, capture_output=True, text=True,
                         timeout=60, check=True)
    return out.stdout.strip()


def _open_here(data: Path, name: str) -> int:
    async def main() -> int:
        async with open_agent(Ledger, name, data_dir=data) as agent:
            return agent.hits()

    return anyio.run(main)


def test_a_second_process_cannot_open_the_data_dir_and_is_told_who_holds_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with think_serve(data) as first:
        assert first.hit("alice") == {"pid": first.process.pid, "hits": 1}

        # a second server on the same directory fails at startup, naming the first
        second = subprocess.run([*THINK_SERVE, "--data-dir", str(data), "--port", str(_free_port())], cwd=ROOT,
                                env=ENV, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert second.returncode != 0
        assert f"is in use by pid {first.process.pid} on {socket.gethostname()}" in second.stderr
        assert "think.cli serve tests.runtime.owner_agents:Ledger" in second.stderr
        assert "distributed runtime" in second.stderr and "proxy" in second.stderr

        # a script opening any agent of the directory, even one the server has not woken, fails too
        for name in ("alice", "bob"):
            refused = _open_in_a_new_process(data, name)
            assert refused.startswith("DataDirInUse:") and f"pid {first.process.pid}" in refused, refused
        with pytest.raises(DataDirInUse) as caught:
            _open_here(data, "bob")
        assert caught.value.owner["pid"] == first.process.pid
        assert caught.value.data_dir == data.resolve()

        assert first.hit("alice") == {"pid": first.process.pid, "hits": 2}  # the first serves on, alone
        first.kill()

    # SIGKILL leaves no stale lock: the next process opens the directory and finds the data
    assert _open_in_a_new_process(data, "alice") == "hits 2"
    with think_serve(data) as again:
        assert again.hit("alice") == {"pid": again.process.pid, "hits": 3}


def test_uvicorn_with_two_workers_on_one_data_dir_stops_at_startup(tmp_path: Path) -> None:
    """The issue's repro: `--workers 2` used to fork conversations; now the second worker cannot
    start, and uvicorn stops, saying why."""
    data = tmp_path / "data"
    process = subprocess.Popen([sys.executable, "-m", "uvicorn", "tests.runtime.owner_app:app", "--workers", "2",
                                "--port", str(_free_port())], cwd=ROOT, env={**ENV, "THINK_DATA_DIR": str(data)},
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        _, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the workers too
        process.communicate()
        pytest.fail("uvicorn --workers 2 kept serving one data directory from two processes")
    assert "think.errors.DataDirInUse: the data directory" in stderr, stderr
    assert "(a worker of pid" in stderr and "uvicorn tests.runtime.owner_app:app --workers 2" in stderr
    assert "Application startup failed" in stderr
    assert _open_in_a_new_process(data, "x") == "hits 0"  # both workers are gone, and so is the lock


async def test_this_process_may_open_its_own_agents_again_and_holds_the_dir_only_while_one_is_open(
        data_dir: Path) -> None:
    async with open_agent(Ledger, "a", data_dir=data_dir) as agent:
        async with open_agent(Ledger, "a", data_dir=data_dir) as again:
            assert again is agent  # the runtime hands out the live instance
        other_runtime = EmbeddedRuntime(data_dir, idle_timeout=None)
        second = await other_runtime.get(Ledger, "b")  # a second runtime in this process shares the hold
        assert ownership.holds(data_dir)
        refused = _open_in_a_new_process(data_dir, "c")
        assert refused.startswith(f"DataDirInUse: the data directory {data_dir} is in use by pid {os.getpid()}")
        await other_runtime.close()
        assert second.db.closed and ownership.holds(data_dir)  # "a" is still open
    assert not ownership.holds(data_dir)  # nothing open, nothing served: another process may have it
    assert _open_in_a_new_process(data_dir, "a") == "hits 0"


async def test_hibernation_gives_the_dir_up_and_waking_takes_it_again(data_dir: Path) -> None:
    runtime = EmbeddedRuntime(data_dir, idle_timeout=None)
    agent = await runtime.get(Ledger, "a")
    agent.kv_set("hits", 5)
    assert await runtime.hibernate(Ledger, "a")
    assert not ownership.holds(data_dir)
    woken = await runtime.get(Ledger, "a")
    assert woken is not agent and woken.hits() == 5 and ownership.holds(data_dir)
    await runtime.close()
    assert not ownership.holds(data_dir)


async def test_a_server_holds_the_dir_for_its_whole_life_even_with_every_agent_hibernated(data_dir: Path) -> None:
    from think.server import create_app

    app = create_app([Ledger], data_dir=data_dir, idle_timeout=0)
    async with app.router.lifespan_context(app):
        assert ownership.holds(data_dir)
        assert _open_in_a_new_process(data_dir, "a").startswith("DataDirInUse:")
    assert not ownership.holds(data_dir)


def test_a_forked_child_is_another_process(tmp_path: Path) -> None:
    """A child made by os.fork() gives up the inherited lock; the parent keeps it."""
    data = tmp_path / "data"
    script = (
        "import os, pathlib\n"
        "from think import DataDirInUse\n"
        "from think.runtime import ownership\n"
        f"data = pathlib.Path({str(data)!r})\n"
        "ownership.claim(data)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        "        ownership.claim(data)\n"
        "        os._exit(1)\n"
        "    except DataDirInUse:\n"
        "        os._exit(7)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status), ownership.holds(data))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=ENV, capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.split() == ["7", "True"]
