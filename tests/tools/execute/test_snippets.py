"""Audit and reuse: executions(limit=…) lists runs; a saved snippet runs again by name with args."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.execute.agents import SIDE_EFFECTS, Coder
from tests.tools.execute.test_execute import execute_parts
from think import open_agent
from think.testing.models import ScriptedModel, call

REPORT = "[tools.get_weather(city=c)['temp'] for c in args['cities']]"


async def test_a_saved_snippet_runs_by_name_with_arguments(data_dir: Path) -> None:
    SIDE_EFFECTS.clear()
    Coder.model = ScriptedModel([call("execute", code=REPORT, args={"cities": ["Oslo"]}), "First.",
                                 call("execute", snippet="temps", args={"cities": ["Lima", "Bogota"]}),
                                 call("execute", snippet="nope"), "Second."])
    async with open_agent(Coder, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["temps"])
        [first] = execute_parts(agent.messages)
        assert first.output["value"] == [12]
        saved = agent.save_snippet("temps", execution_id=first.output["execution_id"],
                                   description="temperatures of args['cities']")
        assert saved == {"name": "temps", "description": "temperatures of args['cities']"}
        with pytest.raises(ValueError, match="exactly one"):
            agent.save_snippet("x", code="1", execution_id=first.output["execution_id"])
        await agent.save_messages(["again"])
        _, second, third = execute_parts(agent.messages)
        assert second.output["value"] == [12, 18]
        assert third.state == "output-error" and "no snippet named 'nope' (saved: temps)" in (third.error_text or "")
        # the model is told about saved snippets in the tool's description
        [spec] = [t for t in Coder.model.requests[-1].tools if t.name == "execute"]
        assert "temps (temperatures of args['cities'])" in spec.description
        runs = agent.executions(limit=5)
        assert [r["code"] for r in runs] == [REPORT, REPORT]
        assert [r["value"] for r in runs] == [[12, 18], [12]]
        assert all(r["status"] == "completed" and r["ms"] > 0 and len(r["journal"]) == r["host_calls"] for r in runs)
        assert len(agent.executions(limit=1)) == 1
