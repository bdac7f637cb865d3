"""A model call that fails with an error `classify_chat_error` calls `"transient"` or
`"rate_limit"` sends the turn into recovery (a backoff of 1 s doubling to 30 s) instead of failing
it; other errors still fail the turn, and the recovery budget still ends an incident."""

from __future__ import annotations

from pathlib import Path

from think import Think, TurnConfig, TurnContext, open_agent
from think.context.overflow import ChatErrorClass
from think.models.base import ModelRequest
from think.recovery import ChatRecoveryPolicy
from think.testing.models import Reply, ScriptedModel, error


class Flaky(Think):
    chat_recovery = ChatRecoveryPolicy(transient_backoff=0.01, max_transient_backoff=0.04, max_attempts=4)
    failures = 2

    def __init__(self, name: str, **kwargs: object) -> None:
        super().__init__(name, **kwargs)
        self.model = ScriptedModel(self.script)

    def script(self, request: ModelRequest) -> Reply:
        said = request.last_user_text
        if said.startswith("fatal"):
            return [error("invalid api key", status=401)]
        if len(self.model.requests) <= self.failures:
            return [error("429 Too Many Requests: slow down", status=429)]
        return f"Answer to {said}"

    def get_model(self) -> ScriptedModel:
        return self.model

    async def before_turn(self, ctx: TurnContext) -> TurnConfig:
        return TurnConfig(max_retries=0)  # no retries inside the model call: each failure ends the turn

    def classify_chat_error(self, error: BaseException | str) -> ChatErrorClass | None:
        return "rate_limit" if "429" in str(error) else super().classify_chat_error(error)


async def test_a_rate_limited_turn_is_retried_until_the_model_answers(tmp_path: Path) -> None:
    async with open_agent(Flaky, "flaky", data_dir=tmp_path) as agent:
        result = await agent.save_messages("what now?")
        assert (result.status, result.recovering, result.error) == ("aborted", True, None)
        assert await agent.wait_until_stable(timeout=10)
        assert [(m.role, m.text) for m in agent.messages] == [("user", "what now?"),
                                                              ("assistant", "Answer to what now?")]
        assert len(agent.model.requests) == 3  # two rate-limited calls, then the answer
        # each retry continues the (empty) reply the failure left
        assert [o.action for o in agent.recovery.outcomes] == ["continue", "continue"]
        assert agent.streams.terminal is None  # nobody was told it failed


async def test_other_errors_still_fail_the_turn(tmp_path: Path) -> None:
    async with open_agent(Flaky, "fatal", data_dir=tmp_path) as agent:
        result = await agent.save_messages("fatal please")
        assert result.status == "error" and "invalid api key" in (result.error or "")
        assert not result.recovering and agent.recovery.outcomes == []


async def test_the_recovery_budget_ends_an_endless_rate_limit(tmp_path: Path) -> None:
    class Endless(Flaky):
        failures = 100

    async with open_agent(Endless, "endless", data_dir=tmp_path) as agent:
        await agent.save_messages("again?")
        assert await agent.wait_until_stable(timeout=10)
        assert [o.action for o in agent.recovery.outcomes] == ["continue"] * 4 + ["exhausted"]
        assert agent.streams.terminal is not None
        assert agent.streams.terminal.body == ChatRecoveryPolicy().terminal_message


def test_the_transient_backoff_starts_at_one_second_and_doubles_to_thirty() -> None:
    policy = ChatRecoveryPolicy()
    assert [policy.delay(n, transient=True) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert policy.delay(1) == 0.5  # a crash or a stall: the recovery backoff
