"""Transcript hygiene and conversion to model messages."""

from __future__ import annotations

from pathlib import Path

from think.context.convert import (
    INTERRUPTED_TOOL_TEXT,
    OLD_TOOL_OUTPUT_CHARS,
    repair_interrupted_tools,
    to_model_messages,
)
from think.context.history import ModelHistory
from think.messages import Message
from think.models.base import AssistantMessage, ToolMessage, UserMessage
from think.sessions import Session
from think.sessions.session import MIGRATIONS
from think.storage import Database, migrate


def assistant(*parts: dict[str, object], id: str = "a1") -> Message:
    return Message.from_json({"id": id, "role": "assistant", "parts": list(parts)})


def tool_part(call_id: str, state: str, **extra: object) -> dict[str, object]:
    return {"type": "tool-calc", "toolCallId": call_id, "state": state, "input": {"x": 1}, **extra}


def test_unsettled_tool_calls_are_repaired_and_approved_ones_kept() -> None:
    message = assistant(tool_part("c1", "input-available"), tool_part("c2", "approval-responded",
                        approval={"id": "p", "approved": True}), tool_part("c3", "output-available", output=1),
                        tool_part("c4", "approval-requested", approval={"id": "q"}))
    changed = repair_interrupted_tools([message])
    assert changed == [message]
    states = [p.state for p in message.tool_parts]
    assert states == ["output-error", "approval-responded", "output-available", "output-error"]
    assert message.tool_parts[0].error_text == INTERRUPTED_TOOL_TEXT
    assert repair_interrupted_tools([message]) == []


def test_each_step_becomes_an_assistant_message_then_its_tool_results() -> None:
    messages = [
        Message.user("hi", id="u1"),
        assistant({"type": "step-start"}, {"type": "reasoning", "text": "hm", "providerMetadata": {"a": {"s": 1}}},
                  tool_part("c1", "output-available", output={"r": 2}),
                  tool_part("c2", "output-error", errorText="bad"),
                  tool_part("c3", "output-denied", approval={"id": "d", "approved": False}),
                  tool_part("c4", "input-available"),
                  {"type": "step-start"}, {"type": "text", "text": "done"}),
    ]
    model_messages, system = to_model_messages(messages)
    assert system == ""
    user, step1, results, step2 = model_messages
    assert isinstance(user, UserMessage) and isinstance(step1, AssistantMessage)
    assert [type(c).__name__ for c in step1.content] == ["ReasoningContent", "ToolCallContent", "ToolCallContent",
                                                          "ToolCallContent"]
    assert isinstance(results, ToolMessage)
    assert [(r.call_id, r.is_error) for r in results.results] == [("c1", False), ("c2", True), ("c3", True)]
    assert "denied" in str(results.results[2].output)
    assert isinstance(step2, AssistantMessage) and step2.content[0].text == "done"  # type: ignore[union-attr]


def test_old_tool_outputs_and_texts_are_truncated_for_the_model_only() -> None:
    big = "y" * 5000
    messages = [assistant(tool_part("c1", "output-available", output=big), id="old")]
    messages += [Message.user(f"m{i}", id=f"u{i}") for i in range(4)]
    model_messages, _ = to_model_messages(messages, step=1)  # the cutoff moves with every message
    output = model_messages[1].results[0].output  # type: ignore[union-attr]
    assert len(output) < OLD_TOOL_OUTPUT_CHARS + 40
    assert output.endswith(f"[truncated {5000 - OLD_TOOL_OUTPUT_CHARS} chars]")
    assert messages[0].tool_parts[0].output == big  # storage is untouched


def test_the_incremental_history_equals_a_full_conversion(tmp_path: Path) -> None:
    db = Database(tmp_path / "h.db")
    migrate(db, MIGRATIONS)
    session = Session(db)
    history = ModelHistory()
    for i in range(12):
        session.save([Message.user("x" * 20_000 + str(i), id=f"u{i}"),
                      assistant({"type": "text", "text": f"answer {i}"}, id=f"a{i}")])
        assert history.build(session) == to_model_messages(session.history())
    # An in-place update of an old message invalidates the cache.
    session.save([assistant({"type": "text", "text": "rewritten"}, id="a1")])
    assert history.build(session) == to_model_messages(session.history())
    session.checkout("u5")
    assert history.build(session) == to_model_messages(session.history())
