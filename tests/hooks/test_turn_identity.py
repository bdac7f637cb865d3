"""Every hook context carries the turn's `request_id`, `trigger` and cancel `signal`;
`Think.active_turn` is the running turn; `message_metadata(...)` stamps server metadata on the
persisted reply; `cancel_submission` says what it did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from think import ProtocolError, Think, TurnConfig, TurnContext, open_agent, tool
from think.context.overflow import ChatErrorClass
from think.hooks import ChatErrorContext, StepContext, ToolCallContext, ToolCallResultContext
from think.models.base import ModelRequest, ToolMessage
from think.recovery import ChatRecoveryPolicy
from think.testing.models import Reply, ScriptedModel, call, error
from think.tools.tool import ToolContext


def script(request: ModelRequest) -> Reply:
    said = request.last_user_text
    if isinstance(request.messages[-1], ToolMessage):
        return "Stamped."
    if said.startswith(("stamp", "flaky")):
        return call("stamp")
    return f"Echo: {said}"


@tool
async def stamp(ctx: ToolContext) -> str:
    """Stamp the reply with server metadata and note the running turn."""
    agent = ctx.agent
    assert isinstance(agent, Recording)
    active = agent.active_turn
    assert active is not None
    agent.seen.append(("tool", active.request_id, active.trigger, active.signal is ctx.signal))
    assert agent.message_metadata({"source": "orders-db"}, rows=3)
    return "ok"


class Recording(Think):
    chat_recovery = ChatRecoveryPolicy(transient_backoff=0.01)
    flaky_calls = 0

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.seen: list[tuple[str, str, str, bool]] = []
        self.model = ScriptedModel(self.answer)

    def answer(self, request: ModelRequest) -> Reply:
        if request.last_user_text.startswith("flaky"):
            self.flaky_calls += 1
            if self.flaky_calls == 1:  # the first call fails; recovery's retry answers
                return [error("503 overloaded", status=503)]
        return script(request)

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> list[Any]:
        return [stamp]

    def classify_chat_error(self, error: BaseException | str) -> ChatErrorClass | None:
        return "transient" if "503" in str(error) else None

    def _note(self, hook: str, ctx: Any) -> None:
        self.seen.append((hook, ctx.request_id, ctx.trigger, isinstance(ctx.signal, anyio.Event)))

    async def before_turn(self, ctx: TurnContext) -> TurnConfig:
        self._note("before_turn", ctx)
        return TurnConfig(max_retries=0)

    async def before_step(self, ctx: StepContext) -> None:
        self._note("before_step", ctx)

    async def before_tool_call(self, ctx: ToolCallContext) -> None:
        self._note("before_tool_call", ctx)

    async def after_tool_call(self, ctx: ToolCallResultContext) -> None:
        self._note("after_tool_call", ctx)

    async def on_chat_error(self, error: BaseException, ctx: ChatErrorContext) -> BaseException:
        self._note("on_chat_error", ctx)
        return error


HOOKS = ["before_turn", "before_step", "before_tool_call", "tool", "after_tool_call", "before_step"]


async def test_every_hook_context_carries_the_request_id_the_trigger_and_the_signal(tmp_path: Path) -> None:
    async with open_agent(Recording, "ids", data_dir=tmp_path) as agent:
        result = await agent.save_messages("stamp it")
        assert [s[0] for s in agent.seen] == HOOKS
        assert {s[1:] for s in agent.seen} == {(result.request_id, "programmatic", True)}
        assert agent.active_turn is None

        agent.seen.clear()
        accepted = await agent.submit_messages("stamp again")
        await agent.wait_for_submission(accepted.submission_id, timeout=10)
        assert {s[1:] for s in agent.seen} == {(accepted.submission_id, "submission", True)}

        agent.seen.clear()
        failed = await agent.save_messages("flaky stamp")  # a 503: retried by recovery
        assert failed.recovering
        assert await agent.wait_until_stable(timeout=10)
        triggers = [(s[0], s[2]) for s in agent.seen]
        assert triggers[:2] == [("before_turn", "programmatic"), ("before_step", "programmatic")]
        assert triggers[2:] == [(hook, "recovery-continue") for hook in HOOKS]


async def test_message_metadata_is_stamped_on_the_persisted_reply(tmp_path: Path) -> None:
    async with open_agent(Recording, "meta", data_dir=tmp_path) as agent:
        assert agent.message_metadata(source="outside") is False  # no turn runs
        with pytest.raises(ProtocolError, match="JSON"):
            agent.message_metadata(bad=object())
        result = await agent.save_messages("stamp this")
        assert result.message is not None
        stored = agent.session.get_message(result.message.id)
        assert stored is not None and isinstance(stored.metadata, dict)
        assert {k: stored.metadata[k] for k in ("source", "rows")} == {"source": "orders-db", "rows": 3}
        assert "usage" in stored.metadata  # merged with what the turn stamps itself
        reply = await agent.save_messages("plain")
        assert reply.message is not None and "source" not in (reply.message.metadata or {})  # per turn


async def test_the_hook_signal_is_the_turns_cancel_signal(tmp_path: Path) -> None:
    class Cancelling(Recording):
        async def before_tool_call(self, ctx: ToolCallContext) -> None:
            active = self.active_turn
            assert active is not None and ctx.signal is active.signal and not ctx.signal.is_set()
            self.cancel_chat(ctx.request_id)
            assert ctx.signal.is_set()  # what a hook waiting on it (a slow lookup, say) learns from
            self.seen.append(("cancelled", ctx.request_id, ctx.trigger, True))

    async with open_agent(Cancelling, "cancel", data_dir=tmp_path) as agent:
        result = await agent.save_messages("stamp then stop")
        assert ("cancelled", result.request_id, "programmatic", True) in agent.seen


async def test_cancel_submission_says_what_it_did(tmp_path: Path) -> None:
    async with open_agent(Recording, "cancel-sub", data_dir=tmp_path) as agent:
        done = await agent.submit_messages("hello")
        await agent.wait_for_submission(done.submission_id, timeout=10)
        assert await agent.cancel_submission(done.submission_id) == "already_terminal"
        assert await agent.cancel_submission("nope") == "not_found"
