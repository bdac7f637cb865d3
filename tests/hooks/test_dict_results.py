"""Hook results written as plain dicts (the shape of the original's TypeScript objects) work like
the typed results; a dict or object of the wrong shape ends that call or turn with a `TypeError`
naming the hook and the type it expects, never a half-finished stream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.hooks.test_decisions import RAN, decider, tool_outputs
from think import open_agent
from think.testing.models import ScriptedModel, call


async def test_a_dict_from_before_tool_call_blocks_substitutes_or_allows_the_call(data_dir: Path) -> None:
    RAN.clear()

    def decide(ctx: Any) -> dict[str, Any]:
        a = ctx.call.input["a"]
        if a == 1:
            return {"action": "block", "reason": "no sums today"}
        if a == 2:
            return {"action": "substitute", "output": {"cached": 4}}
        return {"action": "allow", "input": {"a": 10, "b": 1}}

    cls = decider([[call("add", a=1, b=1), call("add", a=2, b=2), call("add", a=3, b=3)], "ok"], decide=decide)
    async with open_agent(cls, "dicts", data_dir=data_dir) as agent:
        result = await agent.save_messages(["sum"])
        assert result.status == "completed"
        assert RAN == [("add", {"a": 10, "b": 1})]
        assert tool_outputs(agent.model.requests[1]) == ["no sums today", {"cached": 4}, 11]
        assert [p.state for m in agent.messages for p in m.tool_parts] == ["output-available"] * 3


async def test_a_malformed_dict_from_before_tool_call_ends_that_call_with_a_type_error(data_dir: Path) -> None:
    RAN.clear()
    cls = decider([[call("add", a=1, b=1)], "sorry"], decide=lambda ctx: {"action": "deny", "why": "x"})
    async with open_agent(cls, "bad-dict", data_dir=data_dir) as agent:
        result = await agent.save_messages(["sum"])
        assert result.status == "completed" and RAN == []
        part = next(p for m in agent.messages for p in m.tool_parts)
        assert part.state == "output-error"
        assert "before_tool_call" in (part.error_text or "") and "ToolDecision" in (part.error_text or "")
        assert agent.after[0].success is False and "TypeError" in (agent.after[0].error or "")


async def test_an_object_of_the_wrong_type_from_before_tool_call_is_a_type_error_too(data_dir: Path) -> None:
    cls = decider([[call("add", a=1, b=1)], "sorry"], decide=lambda ctx: "block")
    async with open_agent(cls, "bad-type", data_dir=data_dir) as agent:
        assert (await agent.save_messages(["sum"])).status == "completed"
        part = next(p for m in agent.messages for p in m.tool_parts)
        assert part.state == "output-error" and "str" in (part.error_text or "")


async def test_a_dict_from_before_turn_switches_the_model_and_limits_the_tools(data_dir: Path) -> None:
    other = ScriptedModel(["from the other model"])
    cls = decider(["never used"], turn=lambda ctx: {"model": other, "active_tools": ["add"], "maxSteps": 2,
                                                   "temperature": 0.5})
    async with open_agent(cls, "turn-dict", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert result.status == "completed" and agent.messages[-1].text == "from the other model"
        assert {spec.name for spec in other.requests[0].tools} == {"add"}
        assert other.requests[0].settings.temperature == 0.5


async def test_a_before_turn_dict_with_an_unknown_key_fails_the_turn_naming_the_hook(data_dir: Path) -> None:
    cls = decider(["never used"], turn=lambda ctx: {"modle": "x"})
    async with open_agent(cls, "turn-bad", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert result.status == "error"
        assert "before_turn" in (result.error or "") and "TurnConfig" in (result.error or "")
        assert "modle" in (result.error or "")
        assert agent.model.requests == []


async def test_a_before_turn_dict_with_a_wrong_value_type_fails_the_turn(data_dir: Path) -> None:
    cls = decider(["never used"], turn=lambda ctx: {"active_tools": "add"})
    async with open_agent(cls, "turn-type", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert result.status == "error" and "active_tools" in (result.error or "")


async def test_a_dict_from_before_step_overrides_that_step(data_dir: Path) -> None:
    cls = decider(["ok"], step=lambda ctx: {"active_tools": ["add"], "tool_choice": "none"})
    async with open_agent(cls, "step-dict", data_dir=data_dir) as agent:
        assert (await agent.save_messages(["hi"])).status == "completed"
        request = agent.model.requests[0]
        assert [spec.name for spec in request.tools] == ["add"] and request.settings.tool_choice == "none"


async def test_a_malformed_before_step_result_ends_the_turn_with_an_error_naming_the_hook(data_dir: Path) -> None:
    cls = decider(["ok"], step=lambda ctx: ["add"])
    async with open_agent(cls, "step-bad", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert result.status == "error" and "before_step" in (result.error or "")
        assert "StepConfig" in (result.error or "")
