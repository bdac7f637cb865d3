"""`think serve --reload`: a change to the agent's file restarts the server with the new code."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.cli.logged_server import logged_serve
from think.runtime import ownership
from think.serve_reload import watched_dirs

AGENT = '''
from think import Think
from think.testing import ScriptedModel


class FirstAgent(Think):
    def get_model(self):
        return ScriptedModel(["one"])
'''

SECOND = '''

class SecondAgent(Think):
    def get_model(self):
        return ScriptedModel(["two"])
'''


def _status(url: str) -> int | None:
    try:
        return httpx.get(url, timeout=2).status_code
    except httpx.HTTPError:
        return None  # between two workers


def test_an_edited_agent_file_is_served_again_with_the_new_classes(tmp_path: Path) -> None:
    source = tmp_path / "agents_here.py"
    source.write_text(AGENT)
    data = tmp_path / "data"
    log = tmp_path / "serve.log"
    with logged_serve([str(source)], {}, log, "--reload", "--data-dir", str(data),
                      ready_path="/agents/first-agent/x/get-messages") as server:
        second = f"{server.http}/agents/second-agent/x/get-messages"
        assert _status(second) == 400  # no such agent class (yet)
        source.write_text(AGENT + SECOND)
        deadline = time.monotonic() + 60
        while _status(second) != 200:  # the new worker claimed the data directory the old one let go
            assert server.process.poll() is None, server.text()
            assert time.monotonic() < deadline, f"the edit was not served within 60 s:\n{server.text()}"
            time.sleep(0.05)
        assert _status(f"{server.http}/agents/first-agent/x/get-messages") == 200
        assert "reloading on changes to the Python files under" in server.text()
    # Stopping the supervisor stopped its worker: nobody holds the data directory any more.
    ownership.claim(data.resolve())
    ownership.release(data.resolve())


def test_the_watched_folders_are_the_targets_own(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("")
    assert watched_dirs([f"{tmp_path / 'a.py'}:Cls", "tests.cli.ops_agents:Plain"]) == sorted(
        [str(tmp_path), str(Path(__file__).parents[1])])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_killed_supervisor_takes_its_worker_with_it(tmp_path: Path) -> None:
    source = tmp_path / "agents_here.py"
    source.write_text(AGENT)
    data = tmp_path / "data"
    with logged_serve([str(source)], {}, tmp_path / "serve.log", "--reload", "--data-dir", str(data),
                      ready_path="/agents/first-agent/x/get-messages") as server:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)
        deadline = time.monotonic() + 30
        while _status(f"{server.http}/agents/first-agent/x/get-messages") is not None:
            assert time.monotonic() < deadline, "the worker outlived its killed supervisor"
            time.sleep(0.05)
        while True:  # and the data directory is free again
            try:
                ownership.claim(data.resolve())
                break
            except ownership.DataDirInUse:
                assert time.monotonic() < deadline, "the data directory is still held"
                time.sleep(0.05)
        ownership.release(data.resolve())
