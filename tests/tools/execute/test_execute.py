"""The execute tool in a real turn: code that loops over tools.* and state.*, journal, transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.tools.execute.agents import SIDE_EFFECTS, Coder
from think import open_agent
from think.messages import ToolPart
from think.testing.models import ScriptedModel, call

LOOP = """
report = []
for city in ["Oslo", "Lima", "Rome"]:
    w = tools.get_weather(city=city)
    state.write_file(f"/weather/{city}.txt", f"{w['temp']} {w['units']}")
    report.append(w["temp"])
print("done", len(report))
{"temps": report, "files": [e["name"] for e in state.list("/weather")]}
"""


def execute_parts(messages: list[Any]) -> list[ToolPart]:
    return [p for m in messages for p in m.parts if isinstance(p, ToolPart) and p.name == "execute"]


async def test_a_turn_runs_code_that_loops_over_tools_and_state(data_dir: Path) -> None:
    SIDE_EFFECTS.clear()
    Coder.model = ScriptedModel([call("execute", code=LOOP), "Done."])
    async with open_agent(Coder, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["Weather please"])
        [part] = execute_parts(agent.messages)
        out = part.output
        assert part.state == "output-available", part
        assert out["ok"] is True and out["status"] == "completed"
        assert out["value"] == {"temps": [12, 12, 12], "files": ["Lima.txt", "Oslo.txt", "Rome.txt"]}
        assert out["stdout"] == "done 3\n" and out["host_calls"] == 7
        assert SIDE_EFFECTS == ["weather:Oslo", "weather:Lima", "weather:Rome"]
        assert await agent.workspace.read_file("/weather/Oslo.txt") == "12 C"
        [run] = agent.executions(limit=5)
        assert run["execution_id"] == out["execution_id"] and run["code"] == LOOP
        journal = run["journal"]
        assert [(e["seq"], e["namespace"], e["method"]) for e in journal] == [
            (0, "tools", "get_weather"), (1, "state", "write_file"), (2, "tools", "get_weather"),
            (3, "state", "write_file"), (4, "tools", "get_weather"), (5, "state", "write_file"), (6, "state", "list")]
        assert journal[0]["args"] == {"city": "Oslo"} and journal[0]["result"]["temp"] == 12
        assert all(e["ms"] >= 0 for e in journal)
        assert agent.messages[-1].parts[-1].text == "Done."  # type: ignore[union-attr]
        # The model saw typed signatures of every namespace, and no client tool in tools.*
        [spec] = [t for t in Coder.model.requests[0].tools if t.name == "execute"]
        assert "tools.get_weather(city: str, units: str = ...) -> Any" in spec.description
        assert "state.read_file(path: str) -> str | None" in spec.description
        assert "tools.send_email(to: str, body: str) -> Any: Send an email. (pauses for approval)" in spec.description
        assert "ask_user" not in spec.description


async def test_an_exception_in_the_code_is_a_result_the_model_reads(data_dir: Path) -> None:
    Coder.model = ScriptedModel([call("execute", code="x = tools.get_weather(city='Oslo')\n1 / 0"),
                                 call("execute", code="tools.get_weather(town='Oslo')"),
                                 call("execute", code="tools.ask_user(question='hi')"), "ok"])
    async with open_agent(Coder, "a", data_dir=data_dir) as agent:
        result = await agent.save_messages(["go"])
        assert result.status == "completed"
        first, second, third = (p.output for p in execute_parts(agent.messages))
        assert first["ok"] is False and first["error"].endswith("ZeroDivisionError: division by zero")
        assert first["host_calls"] == 1
        assert "TypeError: tools.get_weather: invalid arguments" in second["error"] and "'town'" in second["error"]
        assert "AttributeError" in third["error"] and "ask_user" in third["error"]
        assert agent.messages[-1].parts[-1].text == "ok"  # type: ignore[union-attr]


async def test_plan_edits_applies_all_edits_or_none(data_dir: Path) -> None:
    bad = ("state.plan_edits([{'path': '/a.txt', 'old': 'one', 'new': 'ONE'},"
           " {'path': '/b.txt', 'old': 'missing', 'new': 'x'}])")
    good = ("state.plan_edits([{'path': '/a.txt', 'old': 'one', 'new': 'ONE'},"
            " {'path': '/b.txt', 'old': 'two', 'new': 'TWO'}, {'path': '/c.txt', 'content': 'new'}])")
    Coder.model = ScriptedModel([call("execute", code=bad), call("execute", code=good), "ok"])
    async with open_agent(Coder, "a", data_dir=data_dir) as agent:
        await agent.workspace.write_file("/a.txt", "one")
        await agent.workspace.write_file("/b.txt", "two")
        await agent.save_messages(["edit"])
        first, second = (p.output for p in execute_parts(agent.messages))
        assert "ValueError" in first["error"] and "nothing was changed" in first["error"]
        assert second["value"] == {"changed": ["/a.txt", "/b.txt", "/c.txt"], "edits": 3}
        assert [await agent.workspace.read_file(p) for p in ("/a.txt", "/b.txt", "/c.txt")] == ["ONE", "TWO", "new"]


async def test_two_executions_in_one_step_run_side_by_side(data_dir: Path) -> None:
    code = "[tools.get_weather(city=c)['city'] for c in args['cities']]"
    Coder.model = ScriptedModel([[call("execute", code=code, args={"cities": ["Oslo", "Lima"]}),
                                  call("execute", code=code, args={"cities": ["Rome"]})], "Both done."])
    async with open_agent(Coder, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["two at once"])
        outputs = sorted((p.output["value"] for p in execute_parts(agent.messages)), key=len)
        assert outputs == [["Rome"], ["Oslo", "Lima"]]
        runs = agent.executions(limit=5)
        assert len({r["execution_id"] for r in runs}) == 2 and all(r["status"] == "completed" for r in runs)
