"""The span tree of a tool turn and of a sub-agent turn, with and without content capture, and the
metrics of a turn, from the SDK's in-memory exporters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from tests.observe.conftest import Telemetry
from tests.shared_tools import add
from tests.subagents.agents import Lead
from tests.submissions.server_process import eventually
from think import Think, TurnResult, open_agent
from think.observe import set_capture_content
from think.recovery import ChatRecoveryPolicy
from think.testing import HANG, ScriptedModel, call, error, text, usage

CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
           "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


class Adder(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel([[call("add", a=19, b=23), usage(input=120, output=9)],
                              ["It is 42.", usage(input=150, output=4)]], model_id="openai:gpt-4.1-mini")

    def get_tools(self) -> list[Any]:
        return [add]


class Metered(Adder):
    """Its own agent type and model, so the cumulative metrics of other tests do not mix in."""

    def get_model(self) -> ScriptedModel:
        model = super().get_model()
        model.model_id = "openai:gpt-4.1-nano"
        return model


class Broken(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel([error("upstream is down", status=400)])


def tree(spans: list[ReadableSpan]) -> list[tuple[int, str]]:
    """(depth, name) in start order, depth-first: the shape of the trace."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans}
    for s in spans:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        by_parent.setdefault(parent, []).append(s)
    out: list[tuple[int, str]] = []

    def walk(parent: int | None, depth: int) -> None:
        for s in sorted(by_parent.get(parent, []), key=lambda s: s.start_time or 0):
            out.append((depth, s.name))
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return out


def named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


async def test_a_tool_turn_is_a_turn_span_with_its_model_calls_and_tool_call(telemetry: Telemetry,
                                                                              data_dir: Path) -> None:
    async with open_agent(Adder, "plain", data_dir=data_dir) as agent:
        result = await agent.save_messages(["What is 19 + 23?"])
    assert isinstance(result, TurnResult) and result.status == "completed"
    spans = telemetry.finished()
    assert tree(spans) == [(0, "invoke_agent adder"), (1, "chat gpt-4.1-mini"), (1, "execute_tool add"),
                           (1, "chat gpt-4.1-mini")]
    assert len({s.context.trace_id for s in spans}) == 1
    [root] = named(spans, "invoke_agent adder")
    assert root.attributes is not None
    assert (root.attributes["gen_ai.operation.name"], root.attributes["gen_ai.agent.name"],
            root.attributes["gen_ai.agent.id"], root.attributes["think.request_id"]) == (
        "invoke_agent", "adder", "plain", result.request_id)
    assert (root.attributes["gen_ai.usage.input_tokens"], root.attributes["gen_ai.usage.output_tokens"]) == (270, 13)
    assert root.attributes["think.turn.outcome"] == "completed"
    first, second = named(spans, "chat gpt-4.1-mini")
    for span, reason, tokens in ((first, "tool-calls", (120, 9)), (second, "stop", (150, 4))):
        attributes = dict(span.attributes or {})
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.request.model"] == "gpt-4.1-mini"
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.response.finish_reasons"] == (reason,)
        assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == tokens
        assert span.kind == SpanKind.INTERNAL and span.status.status_code == StatusCode.UNSET
    [tool] = named(spans, "execute_tool add")
    attributes = dict(tool.attributes or {})
    assert (attributes["gen_ai.operation.name"], attributes["gen_ai.tool.name"]) == ("execute_tool", "add")
    assert attributes["gen_ai.tool.call.id"] == result.message.parts[1].tool_call_id  # type: ignore[union-attr]
    for span in spans:  # no content unless asked
        assert not set(CONTENT) & set(span.attributes or {}), span.name


async def test_a_chat_span_carries_the_conventions_attributes_and_no_duplicate_model_id(
        telemetry: Telemetry, data_dir: Path) -> None:
    """The model id is `gen_ai.provider.name` + `gen_ai.request.model`; no `think.model_id` copy
    (each attribute costs the SDK a validation per span)."""
    async with open_agent(Adder, "keys", data_dir=data_dir) as agent:
        await agent.save_messages(["What is 19 + 23?"])
    for span in named(telemetry.finished(), "chat gpt-4.1-mini"):
        assert set(span.attributes or {}) == {
            "gen_ai.operation.name", "gen_ai.request.model", "gen_ai.provider.name",
            "gen_ai.response.finish_reasons", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"}


async def test_content_is_recorded_only_when_asked(telemetry: Telemetry, data_dir: Path) -> None:
    set_capture_content(True)
    async with open_agent(Adder, "content", data_dir=data_dir) as agent:
        await agent.save_messages(["What is 19 + 23?"])
    spans = telemetry.finished()
    first, second = named(spans, "chat gpt-4.1-mini")
    asked = json.loads(str((first.attributes or {})["gen_ai.input.messages"]))
    assert asked == [{"role": "user", "parts": [{"type": "text", "content": "What is 19 + 23?"}]}]
    answered = json.loads(str((first.attributes or {})["gen_ai.output.messages"]))
    assert answered == [{"role": "assistant", "finish_reason": "tool-calls", "parts": [
        {"type": "tool_call", "id": answered[0]["parts"][0]["id"], "name": "add", "arguments": {"a": 19, "b": 23}}]}]
    later = json.loads(str((second.attributes or {})["gen_ai.input.messages"]))
    assert later[-1] == {"role": "tool", "parts": [{"type": "tool_call_response", "id": answered[0]["parts"][0]["id"],
                                                    "response": 42}]}
    final = json.loads(str((second.attributes or {})["gen_ai.output.messages"]))
    assert final[0]["parts"] == [{"type": "text", "content": "It is 42."}]
    [tool] = named(spans, "execute_tool add")
    assert json.loads(str((tool.attributes or {})["gen_ai.tool.call.arguments"])) == {"a": 19, "b": 23}
    assert json.loads(str((tool.attributes or {})["gen_ai.tool.call.result"])) == 42
    assert "gen_ai.system_instructions" in (first.attributes or {})


async def test_a_sub_agent_turn_joins_the_parents_trace(telemetry: Telemetry, data_dir: Path) -> None:
    async with open_agent(Lead, "traced", data_dir=data_dir) as parent:
        result = await parent.save_messages(["tides"])
    assert isinstance(result, TurnResult) and result.status == "completed"
    spans = telemetry.finished()
    assert tree(spans) == [
        (0, "invoke_agent lead"),
        (1, "chat scripted"),
        (1, "execute_tool researcher"),
        (2, "sub_agent researcher"),
        (3, "invoke_agent researcher"),
        (4, "chat scripted"),
        (1, "chat scripted"),
    ]
    assert len({s.context.trace_id for s in spans}) == 1  # one trace, parent and child
    [child] = named(spans, "invoke_agent researcher")
    [run] = named(spans, "sub_agent researcher")
    assert str((child.attributes or {})["gen_ai.agent.id"]).endswith(
        "/" + str((run.attributes or {})["think.sub_agent.run_id"]))
    for span in spans:
        assert not set(CONTENT) & set(span.attributes or {}), span.name


async def test_a_sub_agent_turn_with_content(telemetry: Telemetry, data_dir: Path) -> None:
    set_capture_content(True)
    async with open_agent(Lead, "traced-content", data_dir=data_dir) as parent:
        await parent.save_messages(["tides"])
    spans = telemetry.finished()
    [child_call] = [s for s in named(spans, "chat scripted")
                    if s.parent is not None and s.parent.span_id == named(spans, "invoke_agent researcher")[0]
                    .context.span_id]
    asked = json.loads(str((child_call.attributes or {})["gen_ai.input.messages"]))
    assert asked[-1]["parts"][0]["content"] == "tides"
    [tool] = named(spans, "execute_tool researcher")
    assert "Findings on tides" in str((tool.attributes or {})["gen_ai.tool.call.result"])


async def test_a_failed_model_call_marks_its_spans(telemetry: Telemetry, data_dir: Path) -> None:
    async with open_agent(Broken, "down", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hello"])
    assert isinstance(result, TurnResult) and result.status == "error"
    spans = telemetry.finished()
    [model] = named(spans, "chat scripted")
    assert model.status.status_code == StatusCode.ERROR and "upstream is down" in str(model.status.description)
    assert (model.attributes or {})["error.type"] == "400"
    [root] = named(spans, "invoke_agent broken")
    assert root.status.status_code == StatusCode.ERROR and (root.attributes or {})["think.turn.outcome"] == "error"


async def test_a_turn_records_its_metrics(telemetry: Telemetry, data_dir: Path) -> None:
    def tool_calls() -> int:
        return sum(p.value for p in telemetry.points("think.tool.calls")  # type: ignore[attr-defined]
                   if p.attributes["gen_ai.tool.name"] == "add" and p.attributes["think.outcome"] == "ok")  # type: ignore[attr-defined]

    before = tool_calls()
    async with open_agent(Metered, "metered", data_dir=data_dir) as agent:
        await agent.save_messages(["What is 19 + 23?"])
        active = {p.attributes.get("gen_ai.agent.name"): p.value  # type: ignore[attr-defined]
                  for p in telemetry.points("think.agents.active")}
    assert active["metered"] == 1
    turns = [p for p in telemetry.points("think.turn.duration")
             if p.attributes["gen_ai.agent.name"] == "metered"]  # type: ignore[attr-defined]
    assert sum(p.count for p in turns) == 1 and turns[0].attributes["think.turn.outcome"] == "completed"  # type: ignore[attr-defined]
    points = [p for p in telemetry.points("gen_ai.client.token.usage")
              if p.attributes["gen_ai.request.model"] == "gpt-4.1-nano"]  # type: ignore[attr-defined]
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in points}  # type: ignore[attr-defined]
    assert tokens == {"input": 270, "output": 13}
    # The turn's two model calls are one measurement per token type, made once at the turn's end.
    assert {p.attributes["gen_ai.token.type"]: p.count for p in points} == {"input": 1, "output": 1}  # type: ignore[attr-defined]
    assert tool_calls() == before + 1
    assert all(p.value == 0 for p in telemetry.points("think.turns.queued"))  # type: ignore[attr-defined]


class Digger(Think):
    """Stalls mid-answer once; recovery continues the answer in a new turn."""

    chat_stream_stall_timeout = 0.2
    chat_recovery = ChatRecoveryPolicy(backoff=0.0)

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.model = ScriptedModel([[text("Dig"), HANG], "ging done."])

    def get_model(self) -> ScriptedModel:
        return self.model


async def test_a_recovery_and_a_submission_hold_the_turns_they_run(telemetry: Telemetry, data_dir: Path) -> None:
    async with open_agent(Digger, "stall", data_dir=data_dir) as agent:
        stalled = await agent.save_messages(["dig"])
        assert isinstance(stalled, TurnResult) and stalled.status == "aborted" and stalled.recovering
        await eventually(lambda: any(s.name == "think.recovery" for s in telemetry.finished()))
        assert agent.messages[-1].text == "Digging done."
        spans = telemetry.finished()
        [recovery] = named(spans, "think.recovery")
        first, second = sorted(named(spans, "invoke_agent digger"), key=lambda s: s.start_time or 0)
        assert (first.attributes or {})["think.turn.outcome"] == "aborted"
        assert second.parent is not None and second.parent.span_id == recovery.context.span_id
        assert (recovery.attributes or {})["think.recovery.recovers"] == stalled.request_id
        assert (recovery.attributes or {})["think.recovery.kind"] == "continue"
        assert (recovery.attributes or {})["think.outcome"] == "completed"

        telemetry.spans.clear()
        submission = await agent.submit_messages(["once more"])
        await agent.wait_for_submission(submission.submission_id)
        await eventually(lambda: any(s.name == "think.submission" for s in telemetry.finished()))
        spans = telemetry.finished()
        [held] = named(spans, "think.submission")
        [turn] = named(spans, "invoke_agent digger")
        assert turn.parent is not None and turn.parent.span_id == held.context.span_id
        assert (held.attributes or {})["think.submission_id"] == submission.submission_id


def test_tool_calls_outside_a_turn_count_and_new_tool_names_stop_at_the_cap(
        telemetry: Telemetry, monkeypatch: Any) -> None:
    from think.observe import metrics

    def calls(tool: str, outcome: str) -> int:
        return sum(p.value for p in telemetry.points("think.tool.calls")  # type: ignore[attr-defined]
                   if p.attributes["gen_ai.tool.name"] == tool  # type: ignore[attr-defined]
                   and p.attributes["think.outcome"] == outcome)  # type: ignore[attr-defined]

    before_error, before_other = calls("direct", "error"), calls("other", "ok")
    metrics.tool_call_finished("direct", "error")  # no turn is running: counted at once
    metrics.tool_call_finished("direct", "error")
    assert calls("direct", "error") == before_error + 2
    monkeypatch.setattr(metrics, "_MAX_TOOLS", len(metrics._TOOL_CALLS))  # full: a new name is not kept
    metrics.tool_call_finished("a-name-never-seen", "ok")
    assert calls("a-name-never-seen", "ok") == 0 and calls("other", "ok") == before_other + 1
    metrics.tool_call_finished("direct", "error")  # a known name still counts under its own
    assert calls("direct", "error") == before_error + 3
