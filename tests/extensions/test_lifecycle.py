"""Loading and unloading around turns: approval of model-written code, a tool of an unloaded
extension, concurrent and cancelled loads, per-call limits, `send_message` during a turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from tests.extensions.agents import GREETER, NOTES, Assistant, call_tool
from think import Think, open_agent
from think.extensions import Extension, ExtensionError, create_extension_tools
from think.sandbox.host import HostLimits
from think.testing.models import ScriptedModel, call
from think.tools.run import run_tool
from think.tools.tool import ToolContext


class Approving(Assistant):
    def get_tools(self) -> dict[str, Any]:
        return create_extension_tools(self.extensions)  # needs_approval="auto"


async def test_model_written_code_with_write_access_waits_for_approval(data_dir: Path) -> None:
    Approving.model = ScriptedModel([
        call("load_extension", id="rw", name="notes", source=NOTES, workspace_access="read-write"), "Loaded.",
        call("load_extension", id="ro", name="greeter", source=GREETER), "Loaded too.",
    ])
    async with open_agent(Approving, "a", data_dir=data_dir) as agent:
        await agent.chat("Load notes")
        [part] = agent.messages[-1].tool_parts
        assert part.state == "approval-requested" and agent.extensions.list() == []
        await agent.approve_tool_call("rw", True)
        assert await agent.wait_until_stable(timeout=30)
        assert [e["name"] for e in agent.extensions.list()] == ["notes"]
        await agent.chat("Load greeter")  # no network, no writes: no approval asked
        assert agent.messages[-1].tool_parts[-1].state == "output-available"
        assert [e["name"] for e in agent.extensions.list()] == ["notes", "greeter"]


async def test_a_tool_of_an_unloaded_extension_is_a_tool_error(data_dir: Path) -> None:
    async with open_agent(Assistant, "u", data_dir=data_dir) as agent:
        await agent.extensions.load({"name": "greeter"}, GREETER)
        tool = agent.extensions.get_tools()["greeter_greet"]  # a turn that started before the unload has it
        assert await agent.extensions.unload("greeter")
        assert await agent.extensions.unload("greeter") is False
        result = await run_tool(tool, {"name": "Ada"}, ToolContext(tool_call_id="t", tool_name=tool.name))
        assert result.error == "Extension error: extension 'greeter' is not loaded"


async def test_concurrent_loads_of_one_name_load_it_once(data_dir: Path) -> None:
    async with open_agent(Assistant, "c", data_dir=data_dir) as agent:
        outcomes: list[str] = []

        async def load(version: str) -> None:
            try:
                await agent.extensions.load({"name": "greeter", "version": version}, GREETER)
                outcomes.append(f"loaded {version}")
            except ExtensionError as exc:
                outcomes.append(str(exc))

        async with anyio.create_task_group() as tg:
            for version in ("1", "2", "3"):
                tg.start_soon(load, version)
        assert sum(o.startswith("loaded") for o in outcomes) == 1, outcomes
        assert len(agent.extensions.list()) == 1
        assert agent.db.value("SELECT count(*) FROM think_extensions") == 1
        await agent.extensions.restore()  # idempotent: already restored at start
        assert len(agent.extensions.list()) == 1


async def test_a_cancelled_load_leaves_nothing(data_dir: Path) -> None:
    slow = "x = 0\nwhile x >= 0:\n    x = x + 1\n" + GREETER  # describes itself only at its time limit
    async with open_agent(Assistant, "x", data_dir=data_dir) as agent:
        with anyio.move_on_after(0.5) as scope:
            await agent.extensions.load({"name": "greeter", "context": [{"label": "notes"}]}, slow)
        assert scope.cancelled_caught
        assert agent.extensions.list() == [] and agent.db.value("SELECT count(*) FROM think_extensions") == 0
        assert "greeter_notes" not in agent.session.context.labels()
        await agent.extensions.load({"name": "greeter"}, GREETER)  # the lock was released
        assert (await call_tool(agent, "greeter_greet", name="Ada")).output == "Hello, Ada!"


LIMITED = '''
def spin(args, host):
    while True:
        pass

def hog(args, host):
    return len("x" * 100_000_000)

def chatty(args, host):
    for i in range(50):
        host.read_file("/a")
    return "done"

def ok(args, host):
    return "fine"

tools = {name: {"description": name, "execute": fn, "parameters": {}}
         for name, fn in [("spin", spin), ("hog", hog), ("chatty", chatty), ("ok", ok)]}
'''


class Limited(Think):
    workspace_bash = False
    extension_limits: ClassVar[HostLimits | None] = HostLimits(timeout=1.0, memory=8 * 1024 * 1024, max_host_calls=10)

    def get_extensions(self) -> list[Extension]:
        return [Extension({"name": "lim", "permissions": {"workspace": "read"}}, LIMITED)]


@pytest.mark.parametrize(("tool", "expected"), [
    ("spin", "TimeoutError: the code ran longer than 1 s"),
    ("hog", "MemoryError"),
    ("chatty", "host-call limit reached: at most 10 calls"),
])
async def test_each_call_is_bounded(data_dir: Path, tool: str, expected: str) -> None:
    async with open_agent(Limited, "l", data_dir=data_dir) as agent:
        result = await call_tool(agent, f"lim_{tool}")
        assert result.error is not None and expected in result.error, result.error
        assert (await call_tool(agent, "lim_ok")).output == "fine"  # the next call is unaffected


async def test_send_message_inside_a_turn_follows_that_turns_reply(data_dir: Path) -> None:
    source = '''
def poke(args, host):
    host.send_message("from the extension")
    return "sent"

tools = {"poke": {"description": "Poke.", "execute": poke, "parameters": {}}}
'''
    Assistant.static = [Extension({"name": "p", "permissions": {"session": {"send_message": True}}}, source)]
    Assistant.model = ScriptedModel([call("p_poke"), "Done."])
    try:
        async with open_agent(Assistant, "s", data_dir=data_dir) as agent:
            await agent.chat("go")
            assert [(m.role, m.text) for m in agent.messages] == [
                ("user", "go"), ("assistant", "Done."), ("user", "from the extension")]
    finally:
        Assistant.static = []
