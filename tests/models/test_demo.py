"""The offline demo model, on its own and through the real loop with the demo tools."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import run, types
from think.context.convert import DENIED_TOOL_TEXT
from think.errors import ToolFailed
from think.messages import TextPart, ToolPart
from think.models import demo
from think.models.base import (
    AssistantMessage,
    Model,
    ModelMessage,
    ModelRequest,
    TextContent,
    ToolCallContent,
    ToolMessage,
    ToolResultContent,
    ToolSpec,
    UserMessage,
)
from think.models.demo import DemoModel
from think.models.demo_tools import DEMO_TOOLS, calculate, get_time
from think.models.events import Finish, ReasoningDelta, StreamEvent, TextDelta, ToolCallDelta, ToolCallReady
from think.tools.tool import Tool, ToolContext

SPECS = tuple(ToolSpec(t.name, t.description, t.input_schema) for t in DEMO_TOOLS)


def execute(demo_tool: Tool, **arguments: Any) -> Any:
    assert demo_tool.execute is not None
    return demo_tool.execute(arguments, ToolContext(tool_call_id="call_1", tool_name=demo_tool.name))


async def events(*messages: ModelMessage, tools: tuple[ToolSpec, ...] = SPECS) -> list[StreamEvent]:
    request = ModelRequest(system="", messages=tuple(messages), tools=tools)
    return [event async for event in DemoModel(delay=0).stream(request)]


def text_of(stream: list[StreamEvent]) -> str:
    return "".join(e.text for e in stream if isinstance(e, TextDelta))


def finish_reason(stream: list[StreamEvent]) -> str:
    """The reason of the stream's one `Finish`, which must be its last event."""
    assert [isinstance(e, Finish) for e in stream].count(True) == 1
    last = stream[-1]
    assert isinstance(last, Finish)
    return last.reason


def user(text: str) -> UserMessage:
    return UserMessage((TextContent(text),))


def after_call(name: str, arguments: dict[str, Any], output: Any, *, is_error: bool = False) -> tuple[
        ModelMessage, ...]:
    """A conversation whose last message is the result of one demo tool call."""
    return (user("do it"), AssistantMessage((ToolCallContent("call_1", name, arguments),)),
            ToolMessage((ToolResultContent("call_1", name, output, is_error),)))


def test_it_is_a_model_labelled_demo() -> None:
    model = DemoModel()
    assert isinstance(model, Model)
    assert model.model_id == "demo"
    assert model.delay > 0  # a UI sees the reply stream in


async def test_arithmetic_calls_calculate_and_answers_with_the_result() -> None:
    chunks, reply, result = await run(DemoModel(delay=0), DEMO_TOOLS, prompt="what is 12*(3+4)?")

    assert result.status == "completed"
    assert [step.finish_reason for step in result.steps] == ["tool-calls", "stop"]
    assert types(chunks).count("tool-input-delta") >= 2  # the arguments stream in pieces
    [part] = [p for p in reply.parts if isinstance(p, ToolPart)]
    assert (part.type, part.state, part.input, part.output) == (
        "tool-calculate", "output-available", {"expression": "12*(3+4)"}, 84)
    final = reply.parts[-1]
    assert isinstance(final, TextPart)
    assert final.text.startswith("12*(3+4) = 84.")
    assert "demo model" in final.text


async def test_reasoning_streams_first_in_pieces_and_says_it_is_the_demo() -> None:
    stream = await events(user("hello"))

    first_text = next(i for i, e in enumerate(stream) if isinstance(e, TextDelta))
    reasoning = [e for e in stream[:first_text] if isinstance(e, ReasoningDelta)]
    assert len(reasoning) == first_text >= 3
    assert "".join(e.text for e in reasoning).startswith("Demo reasoning (scripted)")
    pieces = [e.text for e in stream if isinstance(e, TextDelta)]
    assert len(pieces) > 20
    assert all(len(p.split()) == 1 for p in pieces)
    assert finish_reason(stream) == "stop"


async def test_the_time_comes_from_get_time() -> None:
    _chunks, reply, result = await run(DemoModel(delay=0), DEMO_TOOLS, prompt="What time is it in Tokyo?")

    assert result.status == "completed"
    [part] = [p for p in reply.parts if isinstance(p, ToolPart)]
    assert part.type == "tool-get_time"
    assert part.input == {"timezone": "Asia/Tokyo"}
    assert part.state == "output-available"
    assert f"It is {part.output['readable']} in Asia/Tokyo." in reply.text


async def test_a_time_question_without_a_place_asks_for_utc() -> None:
    stream = await events(user("what's the date today?"))

    [ready] = [e for e in stream if isinstance(e, ToolCallReady)]
    assert (ready.name, ready.arguments) == ("get_time", '{"timezone":"UTC"}')
    assert finish_reason(stream) == "tool-calls"


async def test_sending_asks_for_approval() -> None:
    chunks, reply, result = await run(DemoModel(delay=0), DEMO_TOOLS,
                                      prompt="Send a notification to the team saying lunch is here")

    assert result.status == "awaiting-approval"
    assert "tool-approval-request" in types(chunks)
    [part] = [p for p in reply.parts if isinstance(p, ToolPart)]
    assert part.type == "tool-send_notification"
    assert part.state == "approval-requested"
    assert part.input == {"to": "the team", "message": "lunch is here"}


async def test_a_denied_notification_is_acknowledged() -> None:
    stream = await events(*after_call("send_notification", {"to": "the team", "message": "hi"},
                                      DENIED_TOOL_TEXT, is_error=True))

    assert "denied, so nothing was sent" in text_of(stream)
    assert not any(isinstance(e, ToolCallReady) for e in stream)  # it does not try again
    assert finish_reason(stream) == "stop"


async def test_an_approved_notification_is_confirmed() -> None:
    output = {"sent": True, "to": "the team", "message": "hi"}
    stream = await events(*after_call("send_notification", {"to": "the team", "message": "hi"}, output))

    assert text_of(stream).startswith("Done: the notification to the team was approved and recorded")


async def test_a_failing_calculation_is_reported() -> None:
    chunks, reply, result = await run(DemoModel(delay=0), DEMO_TOOLS, prompt="what is 1/0?")

    assert result.status == "completed"
    assert "tool-output-error" in types(chunks)
    assert "The calculate tool failed: Division by zero." in reply.text


async def test_plain_chat_explains_how_to_plug_in_a_real_model() -> None:
    text = text_of(await events(user("Tell me a joke")))

    assert 'You said: "Tell me a joke"' in text
    assert "offline demo model" in text
    assert "not a real LLM" in text
    for hint in ("THINK_MODEL", "openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5", "ollama:qwen3",
                 "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "Ollama", "get_model()"):
        assert hint in text
    for example in ('"what is 12*(3+4)?"', '"what time is it?"', '"send a notification to the team"'):
        assert example in text


async def test_without_the_demo_tools_it_explains_instead_of_calling() -> None:
    stream = await events(user("what is 2+2?"), tools=())

    assert not any(isinstance(e, ToolCallReady) for e in stream)
    assert "DEMO_TOOLS" in text_of(stream)
    assert finish_reason(stream) == "stop"


async def test_the_same_conversation_gets_the_same_reply() -> None:
    first = await events(user("what is 6*7?"))
    assert first == await events(user("what is 6*7?"))
    assert sum(isinstance(e, ToolCallDelta) for e in first) >= 2


@pytest.mark.parametrize("messages", [
    (),
    (AssistantMessage((TextContent("I spoke first."),)),),
    (UserMessage(()),),
    after_call("mystery", {}, {"weird": object()}),
    after_call("calculate", {}, None),
    (user("x"), ToolMessage((ToolResultContent("nope", "get_time", "not a dict"),))),
])
async def test_odd_conversations_still_finish(messages: tuple[ModelMessage, ...]) -> None:
    stream = await events(*messages)

    assert finish_reason(stream) in ("stop", "tool-calls")


async def test_a_bug_in_planning_still_gives_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(request: ModelRequest) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(demo, "_reply", broken)
    stream = await events(user("hello"))

    assert "offline demo model" in text_of(stream)
    assert finish_reason(stream) == "stop"


# ---- the demo tools ----------------------------------------------------------------------------


@pytest.mark.parametrize(("expression", "value"), [
    ("12*(3+4)", 84), ("6 * 7", 42), ("7/2", 3.5), ("6/3", 2), ("0.1+0.2", 0.3), ("-3 + -4", -7),
    ("7 // 2", 3), ("7 % 4", 3), ("2**10", 1024), ("2^10", 1024), ("3 × 4 ÷ 2", 6),
    ("2**100", "1267650600228229401496703205376"),
])
def test_calculate(expression: str, value: Any) -> None:
    assert execute(calculate, expression=expression) == value


@pytest.mark.parametrize(("expression", "problem"), [
    ("1/0", "Division by zero"),
    ("__import__('os').system('true')", "Unsupported syntax"),
    ("(lambda: 1)()", "Unsupported syntax"),
    ("True + 1", "Unsupported syntax"),
    ("1j", "Unsupported syntax"),
    ("2 +", "not a valid arithmetic expression"),
    ("2**99999", "exponent 99999 is too large"),
    ("9**9999", "too large"),
    ("10.0**400", "too large"),
    ("(-8)**(1/3)", "not a real number"),
    ("1" * 600, "longer than 500 characters"),
])
def test_calculate_refuses_what_it_cannot_do_safely(expression: str, problem: str) -> None:
    with pytest.raises(ToolFailed, match=problem):
        execute(calculate, expression=expression)


def test_get_time() -> None:
    now = execute(get_time, timezone="Europe/Paris")
    assert now["timezone"] == "Europe/Paris"
    assert now["iso"][-6:] in ("+01:00", "+02:00")
    assert execute(get_time)["iso"].endswith("+00:00")
    with pytest.raises(ToolFailed, match="Unknown time zone 'Mars/Olympus'"):
        execute(get_time, timezone="Mars/Olympus")


def test_send_notification_needs_approval_and_only_records() -> None:
    [notify] = [t for t in DEMO_TOOLS if t.name == "send_notification"]
    assert notify.needs_approval is True
    assert "nothing is delivered" in notify.description
    assert execute(notify, to="the team", message="hi") == {"sent": True, "to": "the team", "message": "hi"}
