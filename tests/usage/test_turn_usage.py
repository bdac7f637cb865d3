"""Usage of a turn: per step and total, in the reply's metadata, `TurnResult.usage`, the end-of-turn
hook, and the agent's ledger (`Think.usage`), with cost where the price table knows the model."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.shared_tools import add
from tests.submissions.server_process import eventually
from think import Think, TurnResult, open_agent, tool
from think.recovery import ChatRecoveryPolicy
from think.testing import ScriptedModel, call, usage
from think.usage import TurnUsage, cost_of


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


class Priced(Think):
    """A scripted model under a real provider's id, so the price table knows it."""

    model_id = "openai:gpt-4.1-mini"
    seen: list[TurnResult]

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.seen = []
        self.model = ScriptedModel([
            [call("lookup", city="Lisbon"), usage(input=1200, output=30, cached=1000)],
            ["Sunny in Lisbon.", usage(input=1300, output=8, reasoning=3)],
        ], model_id=self.model_id)

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> list[Any]:
        return [lookup]

    async def on_chat_response(self, result: TurnResult) -> None:
        self.seen.append(result)


class Unpriced(Priced):
    model_id = "scripted"


async def test_a_tool_turn_stores_its_usage_per_step_and_in_total(data_dir: Path) -> None:
    async with open_agent(Priced, "lisbon", data_dir=data_dir) as agent:
        before = time.time()
        result = await agent.save_messages(["Weather in Lisbon?"])
        assert isinstance(result, TurnResult) and result.status == "completed"
        stored = agent.messages[-1].metadata["usage"]
        step1 = {"model": "openai:gpt-4.1-mini", "inputTokens": 1200, "outputTokens": 30, "cachedInputTokens": 1000,
                 "totalTokens": 1230}
        step2 = {"model": "openai:gpt-4.1-mini", "inputTokens": 1300, "outputTokens": 8, "reasoningTokens": 3,
                 "totalTokens": 1308}
        cost1 = cost_of("openai:gpt-4.1-mini", input_tokens=1200, output_tokens=30, cached_input_tokens=1000)
        cost2 = cost_of("openai:gpt-4.1-mini", input_tokens=1300, output_tokens=8)
        assert cost1 is not None and cost2 is not None and cost1 < cost2  # cached tokens are cheaper
        assert stored == {"model": "openai:gpt-4.1-mini", "inputTokens": 2500, "outputTokens": 38,
                          "reasoningTokens": 3, "cachedInputTokens": 1000, "totalTokens": 2538,
                          "costUsd": pytest.approx(cost1 + cost2),
                          "steps": [{**step1, "costUsd": pytest.approx(cost1)},
                                    {**step2, "costUsd": pytest.approx(cost2)}]}
        assert result.usage is not None and result.usage == TurnUsage.of_message(agent.messages[-1].metadata)
        assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.total_tokens) == (2500, 38, 2538)
        assert result.usage.cost == pytest.approx(cost1 + cost2)
        assert agent.seen[-1].usage == result.usage  # the end-of-turn hook sees it

        totals = agent.usage(since=before)
        assert (totals.turns, totals.calls, totals.input_tokens, totals.output_tokens, totals.reasoning_tokens,
                totals.cached_input_tokens) == (1, 2, 2500, 38, 3, 1000)
        assert totals.cost == pytest.approx(cost1 + cost2)
        assert agent.usage(since=time.time() + 60).calls == 0

        agent.model.script = [["Again.", usage(input=10, output=2)]]
        agent.model.requests.clear()
        await agent.save_messages(["Once more"])
        totals = agent.usage()
        assert (totals.turns, totals.calls, totals.input_tokens, totals.output_tokens) == (2, 3, 2510, 40)
        await agent.clear_messages()
        assert agent.usage().input_tokens == 2510  # spent tokens stay spent


async def test_an_unknown_model_has_tokens_but_no_cost(data_dir: Path) -> None:
    async with open_agent(Unpriced, "local", data_dir=data_dir) as agent:
        result = await agent.save_messages(["Weather in Lisbon?"])
        assert isinstance(result, TurnResult) and result.usage is not None
        stored = agent.messages[-1].metadata["usage"]
        assert stored["inputTokens"] == 2500 and "costUsd" not in stored
        assert all("costUsd" not in step for step in stored["steps"])
        assert result.usage.cost is None and agent.usage().cost is None


def test_cost_of_unknown_models_is_none() -> None:
    assert cost_of("scripted", input_tokens=10, output_tokens=1) is None
    assert cost_of("openai:no-such-model-xyz", input_tokens=10, output_tokens=1) is None
    assert cost_of("openai-compatible:http://localhost:1/v1#gpt-4o", input_tokens=10, output_tokens=1) is None
    assert cost_of("openai:gpt-4.1-mini", input_tokens=None, output_tokens=None) is None
    assert cost_of("openai:gpt-4.1-mini", input_tokens=1_000_000, output_tokens=0) == pytest.approx(0.4)


class Killed(Think):
    """The agent of tests/usage/killed_turn.py, after the restart: it finishes the answer."""

    chat_recovery = ChatRecoveryPolicy(backoff=0.0)
    model = ScriptedModel([[" 3.", usage(input=1300, output=2)]], model_id="openai:gpt-4.1-mini")

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> list[Any]:
        return [add]


def _kill_during_the_second_call(data: Path) -> list[tuple[object, ...]]:
    """Run tests/usage/killed_turn.py until its tool step finished, SIGKILL it, and read the ledger."""
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-m", "tests.usage.killed_turn", str(data)], cwd=root,
                             env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "step 0 finished"  # the tool step, then a hanging call
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    with sqlite3.connect(data / "killed" / "k.db") as db:
        return db.execute("SELECT step, model, input, output, reasoning, cached FROM think_usage").fetchall()


async def test_a_killed_turn_keeps_the_calls_it_finished(tmp_path: Path) -> None:
    """SIGKILL during the second model call: the first call's usage is in the ledger already, and
    the recovered answer's metadata counts it with the call that finished the answer."""
    rows = _kill_during_the_second_call(tmp_path / "d")
    assert rows == [(0, "openai:gpt-4.1-mini", 1200, 30, None, 1000)]

    async with open_agent(Killed, "k", data_dir=tmp_path / "d") as agent:  # the restart recovers the turn
        # (How much of "The answer is" the killed process had stored varies; the continuation ends it.)
        await eventually(lambda: agent.messages[-1].text.endswith(" 3.") and not agent.is_busy())
        stored = agent.messages[-1].metadata["usage"]
        assert [(s["inputTokens"], s["outputTokens"]) for s in stored["steps"]] == [(1200, 30), (1300, 2)]
        assert (stored["inputTokens"], stored["outputTokens"]) == (2500, 32)
        totals = agent.usage()
        assert (totals.calls, totals.input_tokens, totals.output_tokens) == (2, 2500, 32)


async def test_a_turns_final_usage_is_computed_once_per_step_and_follows_new_steps() -> None:
    from think.models.events import Usage
    from think.usage.meter import UsageMeter

    meter = UsageMeter()
    meter.add("scripted", Usage(input_tokens=10, output_tokens=2))
    first = await meter.final()
    assert first["inputTokens"] == 10 and len(first["steps"]) == 1
    assert await meter.final() is first  # asked again with no new step: the same value
    meter.add("scripted", Usage(input_tokens=5, output_tokens=1))
    second = await meter.final()
    assert second["inputTokens"] == 15 and len(second["steps"]) == 2
    assert first["inputTokens"] == 10  # the earlier value is left as it was
