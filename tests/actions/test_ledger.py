"""The idempotency ledger: a key's side effect runs once; failures, timeouts and output limits."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from tests.actions.agents import Shop, effects
from think import ActionContext, Think, action
from think.actions.outcomes import MAX_OUTPUT_CHARS
from think.errors import ConfigurationError
from think.messages import Message, ToolPart
from think.runtime import open_agent
from think.testing.models import ScriptedModel, call


def outputs(messages: list[Message], name: str) -> list[Any]:
    return [p.output for m in messages for p in m.parts if isinstance(p, ToolPart) and p.name == name]


async def test_an_explicit_key_runs_once_across_turns_and_replays_without_attachments(data_dir: Path) -> None:
    Shop.model = ScriptedModel([call("charge", invoice_id="inv-1", cents=500), "Charged.",
                                call("charge", invoice_id="inv-1", cents=500), "Charged again?"])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        first = await agent.save_messages(["charge inv-1"])
        second = await agent.save_messages(["charge inv-1 again"])
        assert effects() == ["charge:inv-1:500"]  # the second call was answered by the ledger
        assert outputs(agent.messages, "charge") == [{"charged": 500, "invoice": "inv-1"}] * 2
        assert first.attachments == ({"type": "card", "title": "charged inv-1"},)
        assert second.attachments == ()  # a replay does not re-fire attachments
        row = agent.action_runtime.ledger.row("action:charge:invoice:inv-1")
        assert row is not None and row["status"] == "settled"


async def test_the_same_key_with_another_input_is_refused(data_dir: Path) -> None:
    Shop.model = ScriptedModel([call("charge", invoice_id="inv-2", cents=5), "ok",
                                call("charge", invoice_id="inv-2", cents=9), "ok"])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["one"])
        await agent.save_messages(["two"])
        assert effects() == ["charge:inv-2:5"]
        assert outputs(agent.messages, "charge")[1]["error"]["name"] == "ActionIdempotencyError"


async def test_without_a_key_each_tool_call_runs(data_dir: Path) -> None:
    Shop.model = ScriptedModel([[call("note", text="a"), call("note", text="a")], "Two notes."])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["note twice"])
        assert effects() == ["note:a", "note:a"]
        assert outputs(agent.messages, "note") == ["noted", "noted"]


async def test_an_exception_is_a_structured_output_its_attachments_drop_and_the_key_is_released(
        data_dir: Path) -> None:
    Shop.model = ScriptedModel([call("explode", why="card declined"), "It failed."])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        result = await agent.save_messages(["go"])
        [out] = outputs(agent.messages, "explode")
        assert out == {"error": {"name": "RuntimeError", "message": "card declined"}}
        assert result.attachments == () and agent.reply_attachments() == []
        [part] = [p for p in agent.messages[-1].tool_parts]
        assert part.state == "output-available"  # the model reads it; the turn did not fail
        assert agent.sql("SELECT count(*) AS n FROM think_action_ledger")[0]["n"] == 0


class Slow(Think):
    model: ClassVar[ScriptedModel] = ScriptedModel([])
    workspace_bash = False
    seen: ClassVar[list[Any]] = []

    def get_model(self) -> ScriptedModel:
        return type(self).model

    def get_actions(self) -> list[Any]:
        async def wait(ctx: ActionContext, seconds: float) -> str:
            """Sleep."""
            try:
                await anyio.sleep(seconds)
            finally:
                type(self).seen.append(ctx.signal)
            return "woke"

        def big(size: int) -> str:
            """A long text."""
            return "x" * size

        def odd() -> Any:
            """Not JSON by itself."""
            return {"when": Path("/tmp"), 3: {1, 2} and "set"}

        return [action(wait, timeout=0.2), action(big), action(odd),
                action(name="keyed", description="Keyed once", input_schema={"type": "object", "properties": {}},
                       idempotency_key="the-only-one", execute=self._keyed)]

    calls: ClassVar[int] = 0

    async def _keyed(self, input: dict[str, Any], ctx: ActionContext) -> int:
        type(self).calls += 1
        await anyio.sleep(0.05)
        return type(self).calls


async def test_a_timeout_is_a_structured_output_and_sets_the_signal(data_dir: Path) -> None:
    Slow.seen = []
    Slow.model = ScriptedModel([call("wait", seconds=30), "Too slow."])
    async with open_agent(Slow, "s", data_dir=data_dir) as agent:
        with anyio.fail_after(20):
            await agent.save_messages(["wait"])
        [out] = outputs(agent.messages, "wait")
        assert out["error"]["name"] == "ActionTimeoutError" and "0.2 s" in out["error"]["message"]
        [signal] = Slow.seen
        assert signal is not None and signal.is_set()  # `execute` can tell why it was stopped


async def test_outputs_are_json_normalised_and_capped(data_dir: Path) -> None:
    Slow.model = ScriptedModel([[call("big", size=MAX_OUTPUT_CHARS * 2), call("odd")], "ok"])
    async with open_agent(Slow, "s", data_dir=data_dir) as agent:
        await agent.save_messages(["go"])
        [big] = outputs(agent.messages, "big")
        assert big["truncated"] is True and len(big["preview"]) == MAX_OUTPUT_CHARS
        assert big["chars"] == MAX_OUTPUT_CHARS * 2 + 2
        [odd] = outputs(agent.messages, "odd")
        assert odd == {"when": "/tmp", "3": "set"}


async def test_concurrent_calls_of_one_key_in_one_process_run_once(data_dir: Path) -> None:
    Slow.calls = 0
    Slow.model = ScriptedModel([[call("keyed"), call("keyed"), call("keyed")], "ok"])
    async with open_agent(Slow, "s", data_dir=data_dir) as agent:
        await agent.save_messages(["go"])
        assert Slow.calls == 1
        assert outputs(agent.messages, "keyed") == [1, 1, 1]


def test_definitions_that_cannot_work_are_refused() -> None:
    def f(x: int) -> int:
        """F."""
        return x

    with pytest.raises(ConfigurationError, match="would never park"):
        action(f, kind="durable-pause", approval=False)
    with pytest.raises(ConfigurationError, match="kind must be"):
        action(f, kind="sometimes")  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match="approval_risk"):
        action(f, approval=True, approval_risk="huge")  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match="needs a name"):
        action(description="x", input_schema={"type": "object"}, execute=lambda i, c: 1)
    with pytest.raises(ConfigurationError, match="describes an object"):
        action(name="x", description="x", input_schema={"type": "string"}, execute=lambda i, c: 1)
    assert action(f, approval=True).kind == "approval-gated"
    assert action(f).kind == "server" and action(f, kind="durable-pause").approval is True


async def test_a_regenerated_answer_does_not_charge_again(data_dir: Path) -> None:
    Shop.model = ScriptedModel([call("charge", invoice_id="inv-3", cents=40), "Charged 40.",
                                call("charge", invoice_id="inv-3", cents=40), "Charged 40 (again?)."])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["charge inv-3"])
        regenerated = await agent.regenerate()
        assert regenerated.status == "completed"
        assert effects() == ["charge:inv-3:40"]  # the new branch's call was answered by the ledger
        assert outputs(agent.messages, "charge") == [{"charged": 40, "invoice": "inv-3"}]
        assert agent.messages[-1].text == "Charged 40 (again?)."


async def test_old_ledger_rows_are_swept_at_start_and_fresh_ones_kept(data_dir: Path) -> None:
    Shop.model = ScriptedModel([call("charge", invoice_id="old", cents=1), "ok",
                                call("charge", invoice_id="new", cents=2), "ok"])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["one"])
        Shop.clock_offset = 31 * 86400  # a month later
        await agent.save_messages(["two"])
    async with open_agent(Shop, "a", data_dir=data_dir) as agent:
        keys = [r["key"] for r in agent.sql("SELECT key FROM think_action_ledger")]
        assert keys == ["action:charge:invoice:new"]  # the settled row older than 30 days went


class Cancellable(Shop):
    started: ClassVar[anyio.Event | None] = None
    signals: ClassVar[list[Any]] = []

    def get_actions(self) -> list[Any]:
        async def hold(ctx: ActionContext, what: str) -> str:
            """Wait until cancelled."""
            type(self).signals.append(ctx.signal)
            started = type(self).started
            assert started is not None
            started.set()
            await anyio.sleep(60)
            return "never"

        return [action(hold, idempotency_key=lambda input, ctx: input["what"])]


async def test_a_turn_stopped_during_execute_releases_the_key_and_sets_the_signal(data_dir: Path) -> None:
    Cancellable.started, Cancellable.signals = anyio.Event(), []
    Cancellable.model = ScriptedModel([call("hold", what="k1"), "never"])
    async with open_agent(Cancellable, "c", data_dir=data_dir) as agent:
        async with anyio.create_task_group() as group:
            group.start_soon(agent.save_messages, ["hold"])
            with anyio.fail_after(10):
                await Cancellable.started.wait()
            agent.cancel_all_chats()
        [signal] = Cancellable.signals
        assert signal.is_set()
        assert agent.sql("SELECT count(*) AS n FROM think_action_ledger")[0]["n"] == 0  # the next call runs cleanly


async def test_attachments_from_policy_callbacks_are_ignored(data_dir: Path) -> None:
    answers: list[bool] = []

    def key(input: dict[str, Any], ctx: ActionContext) -> str:
        answers.append(ctx.attach_reply({"type": "card", "title": "from the key"}))
        return "k"

    def run(input: dict[str, Any], ctx: ActionContext) -> str:
        ctx.attach_reply({"type": "card", "title": "from execute"})
        return "ran"

    def needs(input: dict[str, Any], ctx: ActionContext) -> list[str]:
        answers.append(ctx.attach_reply({"type": "card", "title": "from permissions"}))
        return []

    class Policies(Shop):
        def get_actions(self) -> list[Any]:
            return [action(name="keyed_card", description="x", input_schema={"type": "object"}, execute=run,
                           idempotency_key=key, permissions=needs)]

    Policies.model = ScriptedModel([call("keyed_card"), "ok"])
    async with open_agent(Policies, "p", data_dir=data_dir) as agent:
        result = await agent.save_messages(["go"])
        assert answers and not any(answers)  # both callbacks were told no
        assert result.attachments == ({"type": "card", "title": "from execute"},)
