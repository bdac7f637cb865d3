"""A hook that raises: contained, reported as the original does, and never a half-persisted turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from think import (
    ChatErrorContext,
    StepConfig,
    StepContext,
    StepRecord,
    Think,
    ToolCallResultContext,
    TurnConfig,
    TurnContext,
    TurnResult,
    open_agent,
    tool,
)
from think.messages import JSONObject
from think.stream.fanout import TurnEvent, TurnFailed, TurnFinished
from think.testing.models import ScriptedModel, call


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Fragile(Think):
    """A two-step tool turn; the hook named in `broken` raises."""

    broken: str = ""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.errors: list[tuple[str, ChatErrorContext]] = []
        self.responses: list[TurnResult] = []
        self.events: list[TurnEvent] = []
        self.fanout.subscribe(self._event)

    async def _event(self, event: TurnEvent) -> None:
        if isinstance(event, TurnFailed | TurnFinished):
            self.events.append(event)

    def _maybe_raise(self, hook: str) -> None:
        if type(self).broken == hook:
            raise RuntimeError(f"{hook} is broken")

    def get_model(self) -> ScriptedModel:
        return ScriptedModel([[call("add", a=1, b=2)], "Three."])

    def get_tools(self) -> list[Any]:
        return [add]

    async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
        self._maybe_raise("before_turn")
        return None

    async def before_step(self, ctx: StepContext) -> StepConfig | None:
        if ctx.step_number == 1:
            self._maybe_raise("before_step")
        return None

    async def after_tool_call(self, ctx: ToolCallResultContext) -> None:
        self._maybe_raise("after_tool_call")

    async def on_step_finish(self, step: StepRecord) -> None:
        if step.step_number == 1:
            self._maybe_raise("on_step_finish")

    async def on_chunk(self, chunk: JSONObject) -> None:
        if chunk["type"] == "text-delta":
            self._maybe_raise("on_chunk")

    async def on_chat_response(self, result: TurnResult) -> None:
        self.responses.append(result)
        self._maybe_raise("on_chat_response")

    async def on_chat_error(self, error: BaseException, ctx: ChatErrorContext) -> BaseException | str | None:
        self.errors.append((str(error), ctx))
        self._maybe_raise("on_chat_error")
        return f"Sorry, something broke ({ctx.stage})."


def broken(hook: str) -> type[Fragile]:
    return type(f"Broken_{hook}", (Fragile,), {"broken": hook})


async def test_before_turn_raising_fails_the_turn_before_it_streams_and_keeps_the_user_message(
        data_dir: Path) -> None:
    async with open_agent(broken("before_turn"), "bt", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert (result.status, result.error) == ("error", "Sorry, something broke (turn).")
        assert [m.role for m in agent.messages] == ["user"]
        message, ctx = agent.errors[0]
        assert message == "before_turn is broken" and (ctx.stage, ctx.messages_persisted) == ("turn", True)
        assert ctx.request_id == result.request_id
        assert agent.responses == []  # a pre-stream failure gets no on_chat_response, as in the original
        assert isinstance(agent.events[-1], TurnFinished) and agent.events[-1].error == result.error


@pytest.mark.parametrize("hook", ["before_step", "on_step_finish", "on_chunk"])
async def test_a_hook_raising_mid_stream_fails_the_turn_and_the_partial_reply_is_persisted(
        data_dir: Path, hook: str) -> None:
    cls = broken(hook)
    async with open_agent(cls, hook, data_dir=data_dir) as agent:
        result = await agent.save_messages(["what is 1 + 2?"])
        assert result.status == "error" and result.error == "Sorry, something broke (stream)."
        message, ctx = agent.errors[0]
        assert message == f"RuntimeError: {hook} is broken"
        assert (ctx.stage, ctx.messages_persisted) == ("stream", True)
        # The tool step is stored: the turn is complete in storage, just shorter.
        assert [m.role for m in agent.messages] == ["user", "assistant"]
        part = agent.messages[-1].tool_parts[0]
        assert (part.state, part.output) == ("output-available", 3)
        assert result.message is not None and result.message.id == agent.messages[-1].id
        # Clients saw the replacement text, then the end of the turn; on_chat_response ran.
        assert isinstance(agent.events[0], TurnFailed) and agent.events[0].error == result.error
        assert isinstance(agent.events[-1], TurnFinished) and agent.events[-1].outcome == "error"
        assert [r.status for r in agent.responses] == ["error"]
    cls.broken = ""
    async with open_agent(cls, hook, data_dir=data_dir) as agent:  # started again: the same transcript
        assert [m.role for m in agent.messages] == ["user", "assistant"]
        assert (await agent.save_messages(["again"])).status == "completed"


@pytest.mark.parametrize("hook", ["after_tool_call", "on_chat_response"])
async def test_observation_hooks_that_raise_are_logged_and_the_turn_completes(
        data_dir: Path, hook: str, caplog: pytest.LogCaptureFixture) -> None:
    async with open_agent(broken(hook), hook, data_dir=data_dir) as agent:
        result = await agent.save_messages(["what is 1 + 2?"])
        assert result.status == "completed" and agent.messages[-1].text == "Three."
        assert agent.errors == []
        assert f"{hook} raised" in caplog.text


async def test_on_chat_error_raising_reports_the_original_error(data_dir: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    class Both(Fragile):
        async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
            raise RuntimeError("the real problem")

    Both.broken = "on_chat_error"
    async with open_agent(Both, "both", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert (result.status, result.error) == ("error", "the real problem")
        assert "on_chat_error raised" in caplog.text
        assert [m.role for m in agent.messages] == ["user"]


async def test_on_chat_error_gets_the_classification_of_a_stream_error(data_dir: Path) -> None:
    from think.testing.models import error

    class TooLong(Fragile):
        def get_model(self) -> ScriptedModel:
            return ScriptedModel([error("prompt is too long: 250000 tokens > 200000 maximum", status=400)])

    async with open_agent(TooLong, "long", data_dir=data_dir) as agent:
        result = await agent.save_messages(["a very long question"])
        assert result.status == "error"
        [(_, ctx)] = agent.errors
        assert (ctx.stage, ctx.classification) == ("stream", "context_overflow")
