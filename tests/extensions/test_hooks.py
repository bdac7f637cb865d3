"""Extension hooks in a real turn: after the agent's own, in load order; a hook that raises or
runs past the hook timeout is logged and the turn goes on; only `before_turn` results count."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import ClassVar

import pytest

from think import Think, open_agent
from think.extensions import Extension
from think.hooks import StepRecord, ToolCallContext, ToolCallResultContext, TurnConfig, TurnContext
from think.messages import JSONObject
from think.testing.models import ScriptedModel, call

LOGGER = '''
def log(line, host):
    old = host.read_file("/log.txt") or ""
    host.write_file("/log.txt", old + "NAME:" + line + "\\n")

def before_turn(s, host):
    log("before_turn:" + str(s["message_count"]) + ":" + s["model_id"] + ":" + str("A_noop" in s["tool_names"]), host)
    return {"temperature": 0.25, "model": "other:model", "system": "obey the extension", "max_steps": "many"}

def before_tool_call(s, host):
    log("before_tool_call:" + s["tool_name"] + ":" + str(s["input"]) + ":" + str(s["step_number"]), host)
    return {"action": "block"}

def after_tool_call(s, host):
    gap = s["duration_ms"] - s["duration"] * 1000
    seconds = s["duration"] >= 0 and s["duration"] < 60 and gap > -0.01 and gap < 0.01
    log("after_tool_call:" + s["tool_name"] + ":" + str(s["success"] and seconds) + ":" + str(s["output"]), host)

def on_step_finish(s, host):
    log("on_step_finish:" + str(s["step_number"]) + ":" + s["finish_reason"], host)

def on_chunk(s, host):
    if s["type"] == "text-delta":
        log("on_chunk:" + s["text"], host)

def noop(args, host):
    return "noop"

hooks = {"before_turn": before_turn, "before_tool_call": before_tool_call, "after_tool_call": after_tool_call,
         "on_step_finish": on_step_finish, "on_chunk": on_chunk}
tools = {"noop": {"description": "Do nothing.", "execute": noop, "parameters": {}}}
'''

BROKEN = '''
def explode(s, host):
    raise ValueError("the hook broke")

def spin(s, host):
    while True:
        pass

hooks = {"before_tool_call": explode, "after_tool_call": spin}
tools = {"noop": {"description": "Do nothing.", "execute": lambda args, host: None, "parameters": {}}}
'''
RW = {"workspace": "read-write"}


class Hooked(Think):
    model: ClassVar[ScriptedModel] = ScriptedModel([])
    workspace_bash = False
    extension_hook_timeout = 1.0

    def get_model(self) -> ScriptedModel:
        return type(self).model

    def get_extensions(self) -> list[Extension]:
        return [Extension({"name": "A", "permissions": RW, "hooks": ["before_turn", "on_chunk"]},
                          LOGGER.replace("NAME", "A")),
                Extension({"name": "Broken"}, BROKEN),
                Extension({"name": "B", "permissions": RW}, LOGGER.replace("NAME", "B"))]

    async def _log(self, line: str) -> None:
        old = await self.workspace.read_file("/log.txt") or ""
        await self.workspace.write_file("/log.txt", f"{old}agent:{line}\n")

    async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
        await self._log("before_turn")
        return TurnConfig(max_steps=5)

    async def before_tool_call(self, ctx: ToolCallContext) -> None:
        await self._log(f"before_tool_call:{ctx.call.name}")

    async def after_tool_call(self, ctx: ToolCallResultContext) -> None:
        await self._log(f"after_tool_call:{ctx.call.name}")

    async def on_step_finish(self, step: StepRecord) -> None:
        await self._log(f"on_step_finish:{step.step_number}")

    async def on_chunk(self, chunk: JSONObject) -> None:
        if chunk["type"] == "text-delta":
            await self._log(f"on_chunk:{chunk['delta']}")


async def test_hooks_run_after_the_agents_in_load_order(data_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    Hooked.model = ScriptedModel([call("A_noop", id="c1"), "Done."])
    caplog.set_level(logging.WARNING, logger="think.extensions")
    async with open_agent(Hooked, "h", data_dir=data_dir) as agent:
        result = await agent.chat("Go")
        assert result.status == "completed"
        lines = (await agent.workspace.read_file("/log.txt") or "").splitlines()
    assert lines == [
        "agent:before_turn", "A:before_turn:1:scripted:True", "B:before_turn:1:scripted:True",
        "agent:before_tool_call:A_noop", "A:before_tool_call:A_noop:{}:0", "B:before_tool_call:A_noop:{}:0",
        "agent:after_tool_call:A_noop", "A:after_tool_call:A_noop:True:noop", "B:after_tool_call:A_noop:True:noop",
        "agent:on_step_finish:0", "A:on_step_finish:0:tool-calls", "B:on_step_finish:0:tool-calls",
        "agent:on_chunk:Done.", "A:on_chunk:Done.", "B:on_chunk:Done.",
        "agent:on_step_finish:1", "A:on_step_finish:1:stop", "B:on_step_finish:1:stop",
    ]
    # Only before_turn results are used, and only the settings an extension may change.
    settings = Hooked.model.requests[0]
    assert settings.settings.temperature == 0.25
    assert settings.system != "obey the extension" and agent.messages[-1].text == "Done."
    # The tool ran although a hook returned {"action": "block"}: before_tool_call results are ignored.
    assert [p.output for p in agent.messages[-1].tool_parts] == ["noop"]
    failures = [r.getMessage() for r in caplog.records if "Broken" in r.getMessage()]
    assert any("hook before_tool_call failed" in m and "the hook broke" in m for m in failures), failures
    assert any("hook after_tool_call failed" in m and "TimeoutError" in m for m in failures), failures
