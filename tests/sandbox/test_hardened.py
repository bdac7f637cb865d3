"""Hardened mode: the same host, its workers under bubblewrap as an unprivileged uid with no network."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.conftest import Canary, needs_sandbox
from tests.sandbox.test_host import BATTERY, NS, battery_timeout, escaped
from think.sandbox.hardened import WORKER_UID, hardened_worker
from think.sandbox.host import HostLimits, SandboxHost

pytestmark = needs_sandbox


@pytest.fixture(scope="module")
def wrapper() -> str:
    return hardened_worker()


def workers() -> list[int]:
    """Pids of this process's descendants running the worker as `/monty` (its path in the sandbox)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "exe") == "/monty" and descends_from_us(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def descends_from_us(pid: int) -> bool:
    while pid > 1:
        if pid == os.getpid():
            return True
        status = Path(f"/proc/{pid}/status").read_text()
        pid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
    return False


def uid_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError("no Uid line")


async def test_the_worker_runs_unprivileged_without_the_hosts_network(wrapper: str) -> None:
    out = await SandboxHost(HostLimits(timeout=5), binary=wrapper).run("tools.record(name='x')['name']", NS)
    assert out.status == "completed" and out.value == "x"
    pids = workers()
    assert pids, "no hardened worker process found"
    for pid in pids:
        assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
        assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        if os.geteuid() == 0:
            assert uid_of(pid) == WORKER_UID


@pytest.mark.parametrize(("code", "error"), BATTERY)
async def test_the_battery_is_contained_in_hardened_mode(code: str, error: str, wrapper: str,
                                                         canary: Canary) -> None:
    sandbox = SandboxHost(HostLimits(timeout=battery_timeout(error)), binary=wrapper)
    out = await sandbox.run(code, NS)
    assert out.status == "error" and error in (out.error or ""), out.error
    assert not escaped() and canary.hits == []
    again = await sandbox.run("tools.record(name='after')", NS)
    assert again.status == "completed" and again.value["name"] == "after"


async def test_an_agent_turn_in_hardened_mode(data_dir: Path, wrapper: str) -> None:
    from tests.tools.execute.agents import get_weather
    from tests.tools.execute.test_execute import LOOP, execute_parts
    from think import Think, open_agent
    from think.testing.models import ScriptedModel, call
    from think.tools.execute import create_execute_tool

    class Hardened(Think):
        workspace_bash = False

        def get_model(self) -> ScriptedModel:
            return model

        def get_tools(self) -> list[Any]:
            return [get_weather, create_execute_tool(self, hardened=True)]

    model = ScriptedModel([call("execute", code=LOOP), "Done."])
    async with open_agent(Hardened, "h", data_dir=data_dir) as agent:
        await agent.save_messages(["go"])
        [part] = execute_parts(agent.messages)
        assert part.output["ok"] is True and part.output["value"]["temps"] == [12, 12, 12]
