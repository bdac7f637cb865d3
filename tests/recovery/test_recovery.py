"""Recovery of turns a crash interrupted: decisions, budgets, tool policies, pending approvals."""

from __future__ import annotations

from pathlib import Path

from tests.recovery.agents import RUNS, Recoverable, leave_interrupted, reset, texts
from think import open_agent
from think.context.convert import INTERRUPTED_TOOL_TEXT
from think.messages import ToolPart
from think.recovery import RecoveryDecision
from think.recovery.engine import DECLINED_TEXT
from think.testing.models import ScriptedModel, call
from think.tools.tool import client_tool

START = {"type": "start", "messageId": "m1"}
HEL = [START, {"type": "start-step"}, {"type": "text-start", "id": "t0"},
       {"type": "text-delta", "id": "t0", "delta": "Hel"}]


async def test_a_turn_killed_before_streaming_is_retried_without_a_second_user_message(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel(["Hi there."]))
    user = await leave_interrupted(Recoverable, data_dir, [START], stash={"step": 3})
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert texts(agent.messages) == [("user", "Hello"), ("assistant", "Hi there.")]
        assert agent.messages[0].id == user.id
        [ctx] = Recoverable.contexts
        assert (ctx.recovery_kind, ctx.attempt, ctx.request_id, ctx.recovery_data) == ("retry", 1, "req-1",
                                                                                       {"step": 3})
        assert ctx.last_body == {"mood": "calm"} and ctx.max_attempts == 10
        assert [o.action for o in agent.recovery.outcomes] == ["retry"]
        assert agent.recovery.store.all() == []
        assert len(Recoverable.model.requests) == 1


async def test_a_partial_reply_is_kept_and_continued(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel(["lo, world."]))
    await leave_interrupted(Recoverable, data_dir, HEL)
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        [ctx] = Recoverable.contexts
        assert (ctx.recovery_kind, ctx.partial_text) == ("continue", "Hel")
        transcript = texts(agent.messages)
        assert transcript[0] == ("user", "Hello")
        assert "".join(text for role, text in transcript[1:]) == "Hello, world."
        assert all(role == "assistant" for role, _ in transcript[1:])
        assert agent.recovery.store.all() == [] and agent.streams.terminal is None


async def test_persist_false_drops_the_partial_text_and_retries(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel(["Hello again."]), decision={"persist": False, "continue": True})
    await leave_interrupted(Recoverable, data_dir, HEL)
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert texts(agent.messages) == [("user", "Hello"), ("assistant", "Hello again.")]
        assert [o.action for o in agent.recovery.outcomes] == ["retry"]


async def test_continue_false_keeps_the_partial_and_ends_with_a_terminal_error(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel([]), decision=RecoveryDecision(persist=True, continue_=False))
    await leave_interrupted(Recoverable, data_dir, HEL)
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert texts(agent.messages) == [("user", "Hello"), ("assistant", "Hel")]
        assert agent.streams.terminal is not None and agent.streams.terminal.body == DECLINED_TEXT
        assert Recoverable.model.requests == [] and agent.recovery.store.all() == []


async def test_persist_false_and_continue_false_skip_both(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel([]), decision={"persist": False, "continue": False})
    await leave_interrupted(Recoverable, data_dir, HEL)
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert texts(agent.messages) == [("user", "Hello")]
        assert agent.streams.terminal is not None and agent.streams.terminal.body == DECLINED_TEXT


async def test_attempts_are_bounded_and_exhaustion_is_terminal(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel([]))
    await leave_interrupted(Recoverable, data_dir, HEL, attempt=10)
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        [ctx] = Recoverable.exhausted
        assert ctx.reason == "max_attempts_exceeded" and ctx.partial_text == "Hel"
        assert ctx.terminal_message == agent.chat_recovery.terminal_message
        terminal = agent.streams.terminal
        assert terminal is not None and terminal.body == agent.chat_recovery.terminal_message
        assert Recoverable.contexts == [] and Recoverable.model.requests == []
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:  # replayed until superseded
        assert agent.streams.terminal is not None
        assert Recoverable.exhausted == [ctx]  # not given up twice


async def test_no_progress_for_too_long_is_exhausted(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel([]))
    await leave_interrupted(Recoverable, data_dir, [START], progress_age=301.0)
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert [c.reason for c in Recoverable.exhausted] == ["no_progress_timeout"]


async def test_a_recovery_turn_carries_the_incident_on(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel(["Done."]))
    await leave_interrupted(Recoverable, data_dir, [START], attempt=2, stash=["kept"])
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        [ctx] = Recoverable.contexts
        assert (ctx.attempt, ctx.recovery_root_request_id, ctx.recovery_data) == (3, "req-1", ["kept"])
        assert texts(agent.messages)[-1] == ("assistant", "Done.")
        assert agent.recovery.store.all() == []


async def test_completed_tool_calls_never_rerun_in_flight_ones_follow_their_policy(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel(["All done."]))
    chunks = [START, {"type": "start-step"},
              {"type": "tool-input-available", "toolCallId": "c1", "toolName": "add", "input": {"a": 1, "b": 2}},
              {"type": "tool-output-available", "toolCallId": "c1", "output": 3},
              {"type": "tool-input-available", "toolCallId": "c2", "toolName": "charge", "input": {"amount": 5}},
              {"type": "tool-input-available", "toolCallId": "c3", "toolName": "lookup", "input": {"query": "x"}}]
    await leave_interrupted(Recoverable, data_dir, chunks)
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        parts = {p.tool_call_id: p for m in agent.messages for p in m.parts if isinstance(p, ToolPart)}
        assert (parts["c1"].state, parts["c1"].output) == ("output-available", 3)
        assert (parts["c2"].state, parts["c2"].error_text) == ("output-error", INTERRUPTED_TOOL_TEXT)
        assert (parts["c3"].state, parts["c3"].output) == ("output-available", "found x")
        assert RUNS == {"lookup": 1}  # add completed before the crash, charge is reported, not re-run
        assert texts(agent.messages)[-1] == ("assistant", "All done.")


async def test_a_pending_approval_parks_recovery_without_spending_budget(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel(["Deleted."]))
    chunks = [START, {"type": "start-step"},
              {"type": "tool-input-available", "toolCallId": "c1", "toolName": "delete_all", "input": {}},
              {"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c1"}]
    await leave_interrupted(Recoverable, data_dir, chunks, attempt=10)  # even with no budget left
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=0.5) is False  # the approval waits for a person
        assert [o.action for o in agent.recovery.outcomes] == ["parked"]
        assert Recoverable.exhausted == [] and Recoverable.contexts == [] and agent.streams.terminal is None
        assert agent.has_pending_interaction()
        answer = await agent.approve_tool_call("c1", True, auto_continue=True)
        assert answer is not None
        assert await agent.wait_until_stable(timeout=5)
        assert RUNS == {"delete_all": 1}
        assert texts(agent.messages)[-1][1].endswith("Deleted.")


async def test_a_pending_client_tool_of_get_tools_parks_and_the_clients_answer_finishes(data_dir: Path) -> None:
    """A crash while a `client_tool(...)` declared in `get_tools()` waits for the browser and a
    server tool runs: recovery parks (the client still owes its answer; no budget is spent), the
    server's call follows its policy (`lookup` reruns), and the client's answer finishes the turn."""

    class WithBrowserTool(Recoverable):
        def get_tools(self) -> list:  # type: ignore[type-arg]
            return [*super().get_tools(), client_tool("pick_color", description="The browser asks.")]

    reset(WithBrowserTool, ScriptedModel(["Blue it is."]))
    chunks = [START, {"type": "start-step"},
              {"type": "tool-input-available", "toolCallId": "c1", "toolName": "pick_color", "input": {}},
              {"type": "tool-input-available", "toolCallId": "c2", "toolName": "lookup", "input": {"query": "x"}}]
    await leave_interrupted(WithBrowserTool, data_dir, chunks, attempt=10)  # even with no budget left
    async with open_agent(WithBrowserTool, "r", data_dir=data_dir) as agent:
        assert [o.action for o in agent.recovery.outcomes] == ["parked"]
        assert agent.has_pending_interaction()
        assert await agent.wait_until_stable(timeout=0.2) is False  # the browser owes the answer
        parts = {p.tool_call_id: p for p in agent.messages[-1].tool_parts}
        assert parts["c1"].state == "input-available" and parts["c2"].state == "approval-responded"
        assert WithBrowserTool.exhausted == [] and agent.streams.terminal is None
        await agent.add_tool_result("c1", "blue", auto_continue=True)
        assert await agent.wait_until_stable(timeout=5)
        parts = {p.tool_call_id: p for m in agent.messages for p in m.tool_parts}
        assert (parts["c1"].state, parts["c1"].output) == ("output-available", "blue")
        assert (parts["c2"].state, parts["c2"].output) == ("output-available", "found x")
        assert RUNS == {"lookup": 1}
        assert texts(agent.messages)[-1][1].endswith("Blue it is.")


async def test_a_cut_off_call_of_a_skill_tool_is_the_servers_not_a_clients(data_dir: Path) -> None:
    """Skill and context tools run on the server like `get_tools()`: a crash during one does not
    make recovery wait for a client (it is reported and the turn goes on)."""
    from think.skills.skill import Skill

    class Skilled(Recoverable):
        def get_skills(self) -> list[Skill]:
            return [Skill(name="haiku", description="Write a haiku.", instructions="5, 7, 5.")]

    reset(Skilled, ScriptedModel(["Here is one."]))
    chunks = [START, {"type": "start-step"}, {"type": "tool-input-available", "toolCallId": "c1",
                                              "toolName": "activate_skill", "input": {"name": "haiku"}}]
    await leave_interrupted(Skilled, data_dir, chunks)
    async with open_agent(Skilled, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert [o.action for o in agent.recovery.outcomes] == ["continue"]
        [part] = [p for m in agent.messages for p in m.tool_parts]
        assert (part.state, part.error_text) == ("output-error", INTERRUPTED_TOOL_TEXT)
        assert texts(agent.messages)[-1][1].endswith("Here is one.")


async def test_a_finished_turn_leaves_no_fiber_and_stash_is_kept_while_it_runs(data_dir: Path) -> None:
    from think import tool

    seen: list[object] = []

    @tool
    def remember(note: str) -> str:
        """Stash a note."""
        agent.stash({"note": note})
        [fiber] = agent.recovery.store.all()
        seen.append(fiber.stash)
        return "ok"

    class Stashing(Recoverable):
        def get_tools(self) -> list:  # type: ignore[type-arg]
            return [remember]

    reset(Stashing, ScriptedModel([call("remember", note="n1"), "Kept."]))
    async with open_agent(Stashing, "s", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert result.status == "completed"
        assert seen == [{"note": "n1"}]
        assert agent.recovery.store.all() == []


async def test_submission_turns_are_left_to_submission_recovery(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel(["Submitted answer."]))
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        accepted = await agent.submit_messages(["Hi"])
        done = await agent.wait_for_submission(accepted.submission_id, timeout=5)
        assert done.status == "completed"
        assert agent.recovery.outcomes == [] and agent.recovery.store.all() == []


async def test_the_work_budget_seals_a_runaway_incident(data_dir: Path) -> None:
    from think.recovery import ChatRecoveryPolicy

    class Small(Recoverable):
        chat_recovery = ChatRecoveryPolicy(backoff=0.0, max_recovery_work=1)

    reset(Small, ScriptedModel([]))
    await leave_interrupted(Small, data_dir, [*HEL, {"type": "text-end", "id": "t0"},
                                              {"type": "reasoning-start", "id": "r0"}])
    async with open_agent(Small, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert [c.reason for c in Small.exhausted] == ["work_budget_exceeded"]


async def test_a_recovery_hook_that_raises_gives_the_turn_up(data_dir: Path) -> None:
    class Broken(Recoverable):
        async def on_chat_recovery(self, ctx: object) -> None:  # type: ignore[override]
            raise RuntimeError("no")

    reset(Broken, ScriptedModel([]))
    await leave_interrupted(Broken, data_dir, HEL)
    async with open_agent(Broken, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert [c.reason for c in Broken.exhausted] == ["recovery_aborted"]
        assert agent.streams.terminal is not None and Broken.model.requests == []


async def test_should_keep_recovering_is_asked_from_the_second_attempt(data_dir: Path) -> None:
    from think.recovery import ChatRecoveryPolicy, RecoveryContext

    asked: list[int] = []

    def keep(ctx: RecoveryContext) -> bool:
        asked.append(ctx.attempt)
        return False

    class Picky(Recoverable):
        chat_recovery = ChatRecoveryPolicy(backoff=0.0, should_keep_recovering=keep)

    reset(Picky, ScriptedModel(["lo!"]))
    await leave_interrupted(Picky, data_dir, HEL)  # the first attempt: not asked
    async with open_agent(Picky, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert asked == [] and Picky.exhausted == [] and len(Picky.contexts) == 1

    reset(Picky, ScriptedModel([]))
    await leave_interrupted(Picky, data_dir / "again", HEL, attempt=1)
    async with open_agent(Picky, "r", data_dir=data_dir / "again") as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert asked == [2] and Picky.contexts == []  # said no: on_chat_recovery is not asked
        assert [c.reason for c in Picky.exhausted] == ["recovery_aborted"]
        assert agent.streams.terminal is not None and Picky.model.requests == []


async def test_an_async_should_keep_recovering_that_agrees_lets_the_attempt_run(data_dir: Path) -> None:
    from think.recovery import ChatRecoveryPolicy, RecoveryContext

    async def keep(ctx: RecoveryContext) -> bool:
        return ctx.attempt < 5

    class Patient(Recoverable):
        chat_recovery = ChatRecoveryPolicy(backoff=0.0, should_keep_recovering=keep)

    reset(Patient, ScriptedModel(["lo!"]))
    await leave_interrupted(Patient, data_dir, HEL, attempt=3)
    async with open_agent(Patient, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert Patient.exhausted == [] and [c.attempt for c in Patient.contexts] == [4]
        assert "".join(t for _, t in texts(agent.messages)[1:]) == "Hello!"


async def test_running_turns_keep_a_wake_up_alarm_that_an_idle_agent_drops(data_dir: Path) -> None:
    from think.recovery.engine import WAKE_ID

    reset(Recoverable, ScriptedModel(["one", "two"]))
    async with open_agent(Recoverable, "k", data_dir=data_dir) as agent:
        await agent.save_messages(["Hi"])
        [wake] = [t for t in agent.get_schedules() if t.id == WAKE_ID]
        due = wake.next_run
        await agent.save_messages(["again"])  # armed recently: not written again
        assert [t.next_run for t in agent.get_schedules() if t.id == WAKE_ID] == [due]
    async with open_agent(Recoverable, "k", data_dir=data_dir) as agent:  # hibernated with no fiber
        assert [t for t in agent.get_schedules() if t.id == WAKE_ID] == []
