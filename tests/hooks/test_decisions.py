"""What hooks may decide: tool decisions, per-turn and per-step configuration, structured output,
stop conditions and model-call retries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import orjson
import pytest
from pydantic import BaseModel

import think.step_stream
from think import (
    Allow,
    Block,
    StepConfig,
    StepContext,
    Substitute,
    Think,
    ToolCallContext,
    ToolCallResultContext,
    ToolDecision,
    TurnConfig,
    TurnContext,
    open_agent,
    tool,
)
from think.errors import ModelError
from think.hooks import has_tool_call, step_count_is
from think.models.base import ModelRequest, ToolMessage
from think.models.events import Finish, StreamEvent, TextDelta
from think.testing.models import ScriptedModel, call, error
from think.tools.tool import ToolContext
from think.turns.callbacks import ChatCallback

RAN: list[tuple[str, Any]] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    RAN.append(("add", {"a": a, "b": b}))
    return a + b


@tool
def delete_everything() -> str:
    """Delete every file."""
    RAN.append(("delete_everything", {}))
    return "deleted"


@tool
async def countdown(ctx: ToolContext, start: int) -> AsyncIterator[str]:
    """Count down, reporting each number."""
    for n in range(start, 0, -1):
        yield f"{n}…"
    yield "liftoff"


def tool_outputs(request: ModelRequest) -> list[Any]:
    return [r.output for m in request.messages if isinstance(m, ToolMessage) for r in m.results]


class Decider(Think):
    """Runs whatever `script` says; `decide` and `configure_turn` are set per test."""

    script: Any = None
    decide: Any = None
    configure_turn: Any = None
    configure_step: Any = None

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.model = ScriptedModel(type(self).script)
        self.after: list[ToolCallResultContext] = []

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> list[Any]:
        return [add, delete_everything, countdown]

    async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
        return type(self).configure_turn(ctx) if type(self).configure_turn else None

    async def before_step(self, ctx: StepContext) -> StepConfig | None:
        return type(self).configure_step(ctx) if type(self).configure_step else None

    async def before_tool_call(self, ctx: ToolCallContext) -> ToolDecision | None:
        decide = type(self).decide
        return decide(ctx) if decide else None

    async def after_tool_call(self, ctx: ToolCallResultContext) -> None:
        self.after.append(ctx)


def decider(script: Any, *, decide: Any = None, turn: Any = None, step: Any = None) -> type[Decider]:
    return type("Scenario", (Decider,), {"script": script, "decide": staticmethod(decide) if decide else None,
                                         "configure_turn": staticmethod(turn) if turn else None,
                                         "configure_step": staticmethod(step) if step else None})


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


async def test_block_keeps_the_tool_from_running_and_the_model_sees_the_reason(data_dir: Path) -> None:
    def decide(ctx: ToolCallContext) -> ToolDecision | None:
        if ctx.call.name == "delete_everything":
            return Block("deleting is disabled in read-only mode")
        return Block() if ctx.call.input.get("a") == 13 else None

    cls = decider([[call("delete_everything"), call("add", a=13, b=1)], "ok"], decide=decide)
    async with open_agent(cls, "block", data_dir=data_dir) as agent:
        assert (await agent.save_messages(["clean up"])).status == "completed"
        assert RAN == []
        assert tool_outputs(agent.model.requests[1]) == ["deleting is disabled in read-only mode",
                                                        'Tool "add" was blocked by beforeToolCall.']
        assert [(a.success, a.output) for a in agent.after] == [
            (True, "deleting is disabled in read-only mode"), (True, 'Tool "add" was blocked by beforeToolCall.')]


async def test_substitute_answers_without_running_and_allow_can_rewrite_the_input(data_dir: Path) -> None:
    def decide(ctx: ToolCallContext) -> ToolDecision | None:
        if ctx.call.input.get("a") == 1:
            return Substitute({"cached": 42})
        return Allow(input={"a": 100, "b": 1})

    cls = decider([[call("add", a=1, b=1), call("add", a=2, b=2)], "ok"], decide=decide)
    async with open_agent(cls, "sub", data_dir=data_dir) as agent:
        await agent.save_messages(["sum"])
        assert RAN == [("add", {"a": 100, "b": 1})]
        assert tool_outputs(agent.model.requests[1]) == [{"cached": 42}, 101]
        # after_tool_call reports the model's input and what the model got back.
        assert [(a.call.input, a.output, a.success) for a in agent.after] == [
            ({"a": 1, "b": 1}, {"cached": 42}, True), ({"a": 2, "b": 2}, 101, True)]
        parts = agent.messages[-1].tool_parts
        assert [(p.state, p.output) for p in parts] == [("output-available", {"cached": 42}), ("output-available", 101)]


async def test_a_before_tool_call_that_raises_becomes_that_calls_error(data_dir: Path) -> None:
    def decide(ctx: ToolCallContext) -> ToolDecision | None:
        raise PermissionError("not today")

    cls = decider([[call("add", a=1, b=1)], "sorry"], decide=decide)
    async with open_agent(cls, "raise", data_dir=data_dir) as agent:
        result = await agent.save_messages(["sum"])
        assert result.status == "completed" and RAN == []
        assert agent.after[0].success is False and agent.after[0].error == "PermissionError: not today"
        assert agent.messages[-1].tool_parts[0].state == "output-error"


async def test_async_generator_tools_keep_streaming_preliminary_results_through_the_hook(data_dir: Path) -> None:
    cls = decider([[call("countdown", start=3)], "done"], decide=lambda ctx: Allow())
    async with open_agent(cls, "gen", data_dir=data_dir) as agent:
        chunks: list[dict[str, Any]] = []
        await agent.chat("count", ChatCallback(on_event=lambda body: chunks.append(orjson.loads(body))))
        outputs = [(c.get("preliminary", False), c["output"]) for c in chunks if c["type"] == "tool-output-available"]
        assert outputs == [(True, "3…"), (True, "2…"), (True, "1…"), (False, "liftoff")]


async def test_before_turn_switches_the_model_limits_tools_and_adds_one(data_dir: Path) -> None:
    other = ScriptedModel([[call("extra_tool")], "from the other model"])

    @tool
    def extra_tool() -> str:
        """Only this turn has it."""
        return "extra ran"

    def configure(ctx: TurnContext) -> TurnConfig:
        return TurnConfig(model=other, tools=[extra_tool], active_tools=["add", "extra_tool"], max_steps=4,
                          temperature=0.2, top_p=0.9, seed=7, max_output_tokens=99, timeout=12.5,
                          stop_sequences=["STOP"], headers={"x-test": "1"}, provider_options={"openai": {"a": 1}},
                          system=ctx.system + "\nBe brief.")

    cls = decider(["never used"], turn=configure)
    async with open_agent(cls, "switch", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert result.status == "completed" and agent.messages[-1].text == "from the other model"
        assert agent.model.requests == []
        first = other.requests[0]
        assert {spec.name for spec in first.tools} == {"add", "extra_tool"}
        settings = first.settings
        assert (settings.temperature, settings.top_p, settings.seed, settings.max_output_tokens, settings.timeout) == (
            0.2, 0.9, 7, 99, 12.5)
        assert settings.stop_sequences == ("STOP",) and settings.headers == {"x-test": "1"}
        assert settings.provider_options == {"openai": {"a": 1}} and first.system.endswith("Be brief.")
        assert tool_outputs(other.requests[1]) == ["extra ran"]


async def test_before_step_overrides_one_step(data_dir: Path) -> None:
    second_model = ScriptedModel(["second step model"])

    def step(ctx: StepContext) -> StepConfig | None:
        if ctx.step_number == 0:
            return StepConfig(active_tools=["add"], tool_choice="required", provider_options={"x": {"y": 1}})
        return StepConfig(model=second_model, system="Step two.")

    cls = decider([[call("add", a=1, b=2)]], step=step)
    async with open_agent(cls, "step", data_dir=data_dir) as agent:
        assert (await agent.save_messages(["go"])).status == "completed"
        first = agent.model.requests[0]
        assert [s.name for s in first.tools] == ["add"]
        assert first.settings.tool_choice == "required" and first.settings.provider_options == {"x": {"y": 1}}
        assert second_model.requests[0].system == "Step two." and agent.messages[-1].text == "second step model"


class Verdict(BaseModel):
    label: Literal["spam", "ham"]
    confidence: float


async def test_structured_output_comes_back_parsed_and_a_wrong_answer_is_corrected(data_dir: Path) -> None:
    script = [[call("add", a=1, b=1)],
              [call("final_answer", label="maybe", confidence=2)],   # not a valid Verdict: an input error
              [call("final_answer", label="spam", confidence=0.9)],
              "never reached"]
    cls = decider(script, turn=lambda ctx: TurnConfig(output=Verdict))
    async with open_agent(cls, "output", data_dir=data_dir) as agent:
        result = await agent.save_messages(["Is 'WIN A PRIZE' spam?"])
        assert result.status == "completed"
        assert result.output == Verdict(label="spam", confidence=0.9)
        assert len(agent.model.requests) == 3  # the turn ended with the answer
        first = agent.model.requests[0]
        assert "final_answer" in {s.name for s in first.tools} and "call the `final_answer` tool" in first.system
        schema = next(s for s in first.tools if s.name == "final_answer").input_schema
        assert schema["required"] == ["label", "confidence"]
        states = [p.state for p in agent.messages[-1].tool_parts]
        assert states == ["output-available", "output-error", "output-available"]


async def test_structured_output_from_a_json_schema_and_a_non_object_type(data_dir: Path) -> None:
    cls = decider([[call("final_answer", answer=[3, 1, 2])]], turn=lambda ctx: TurnConfig(output=list[int]))
    async with open_agent(cls, "list", data_dir=data_dir) as agent:
        assert (await agent.save_messages(["three numbers"])).output == [3, 1, 2]
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    cls = decider([[call("final_answer", city="Prague")]], turn=lambda ctx: TurnConfig(output=schema))
    async with open_agent(cls, "schema", data_dir=data_dir) as agent:
        assert (await agent.save_messages(["where?"])).output == {"city": "Prague"}


async def test_stop_when_ends_the_turn_before_the_step_cap(data_dir: Path) -> None:
    script = [[call("add", a=1, b=1)], [call("delete_everything")], [call("add", a=2, b=2)], "never"]
    cls = decider(script, turn=lambda ctx: TurnConfig(stop_when=has_tool_call("delete_everything")))
    async with open_agent(cls, "stop", data_dir=data_dir) as agent:
        result = await agent.save_messages(["go"])
        assert result.status == "completed" and len(agent.model.requests) == 2
        assert [name for name, _ in RAN] == ["add", "delete_everything"]
    cls = decider(script, turn=lambda ctx: TurnConfig(stop_when=[step_count_is(1)], max_steps=5))
    async with open_agent(cls, "count", data_dir=data_dir) as agent:
        await agent.save_messages(["go"])
        assert len(agent.model.requests) == 1

    async def never(steps: Any) -> bool:
        return False

    cls = decider(script, turn=lambda ctx: TurnConfig(stop_when=never, max_steps=2))
    async with open_agent(cls, "cap", data_dir=data_dir) as agent:
        await agent.save_messages(["go"])
        assert len(agent.model.requests) == 2  # the step cap still applies


class Flaky:
    """Fails `failures` times before any content (with `status`, or by raising), then answers."""

    model_id = "flaky"

    def __init__(self, failures: int, status: int | None = 503, *, raise_error: bool = False,
                 after_content: bool = False) -> None:
        self.failures = failures
        self.status = status
        self.raise_error = raise_error
        self.after_content = after_content
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        if self.calls <= self.failures:
            if self.after_content:
                yield TextDelta("Half an answ")
            if self.raise_error:
                raise ModelError("overloaded", status=self.status, retryable=True)
            yield Finish("error", error=f"upstream {self.status}", status=self.status)
            return
        yield TextDelta("Finally.")
        yield Finish("stop")


@pytest.mark.parametrize(("flaky", "retries", "calls", "status"), [
    (Flaky(2, 503), None, 3, "completed"),        # the default: two retries
    (Flaky(1, 429), 1, 2, "completed"),
    (Flaky(1, None, raise_error=True), 1, 2, "completed"),
    (Flaky(3, 500), 1, 2, "error"),                # out of retries
    (Flaky(1, 400), 3, 1, "error"),                # not retryable
    (Flaky(1, 503, after_content=True), 3, 1, "error"),  # content was streamed: never repeated
])
async def test_model_calls_that_fail_before_any_content_are_retried(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch, flaky: Flaky, retries: int | None, calls: int,
        status: str) -> None:
    monkeypatch.setattr(think.step_stream, "RETRY_INITIAL_DELAY", 0.001)

    class Retrying(Think):
        def get_model(self) -> Any:
            return flaky

        async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
            return TurnConfig(max_retries=retries) if retries is not None else None

    async with open_agent(Retrying, "retry", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert (result.status, flaky.calls) == (status, calls)
        if status == "completed":
            assert agent.messages[-1].text == "Finally."


async def test_a_model_error_without_status_is_not_retried(data_dir: Path) -> None:
    cls = decider([error("bad request")])
    async with open_agent(cls, "noretry", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert result.status == "error" and len(agent.model.requests) == 1
