"""Durable submissions with real SQLite: accept before the model runs, idempotency, FIFO, cancel,
list and delete, recovery after the process goes away, and bad input."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from tests.submissions.agents import Ledgered
from tests.submissions.server_process import eventually
from think import EmbeddedRuntime, Message, ProtocolError, open_agent
from think.errors import StorageError
from think.submissions.submissions import WAKE_ID


async def test_a_submission_is_accepted_before_the_model_runs_and_completes_later(data_dir: Path) -> None:
    async with open_agent(Ledgered, "accept", data_dir=data_dir) as agent:
        accepted = await agent.submit_messages(["gated one"], metadata={"source": "webhook"})
        assert accepted.accepted and accepted.status == "pending" and accepted.metadata == {"source": "webhook"}
        assert accepted.request_id is None
        await anyio.sleep(0.05)
        running = agent.inspect_submission(accepted.submission_id)
        assert running is not None and running.status == "running" and running.request_id == accepted.submission_id
        assert [m.text for m in agent.messages] == ["gated one"]  # applied when it started
        assert agent.is_busy()
        agent.gate.set()
        done = await agent.wait_for_submission(accepted.submission_id, timeout=5)
        assert done.status == "completed" and done.completed_at is not None and done.started_at is not None
        assert [m.text for m in agent.messages] == ["gated one", "Echo: gated one"]
        assert agent.statuses == [(accepted.submission_id, s) for s in ("pending", "running", "completed")]
        assert all(t.id != WAKE_ID for t in agent.get_schedules())  # nothing left to wake up for


async def test_the_same_idempotency_key_or_id_runs_once(data_dir: Path) -> None:
    async with open_agent(Ledgered, "idem", data_dir=data_dir) as agent:
        first = await agent.submit_messages(["webhook 123"], idempotency_key="evt-123")
        again = await agent.submit_messages(["webhook 123"], idempotency_key="evt-123")
        assert (again.submission_id, again.accepted, first.accepted) == (first.submission_id, False, True)
        await agent.wait_for_submission(first.submission_id, timeout=5)
        late = await agent.submit_messages(["webhook 123"], idempotency_key="evt-123")
        assert late.accepted is False and late.status == "completed"
        by_id = await agent.submit_messages(["x"], submission_id=first.submission_id)
        assert by_id.accepted is False and by_id.submission_id == first.submission_id
        assert agent.model.calls == ["webhook 123"]
        assert [m.text for m in agent.messages] == ["webhook 123", "Echo: webhook 123"]
        other = await agent.submit_messages(["other"], submission_id="s-2", idempotency_key="evt-2")
        with pytest.raises(ProtocolError, match="belongs to submission"):
            await agent.submit_messages(["x"], submission_id="s-3", idempotency_key="evt-2")
        with pytest.raises(ProtocolError, match="another idempotency key"):
            await agent.submit_messages(["x"], submission_id="s-2", idempotency_key="evt-9")
        await agent.wait_for_submission(other.submission_id, timeout=5)
        assert len(agent.list_submissions()) == 2


async def test_submissions_run_in_order_after_the_turn_that_is_running(data_dir: Path) -> None:
    async with open_agent(Ledgered, "fifo", data_dir=data_dir) as agent:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(agent.save_messages, ["gated chat turn"])
            await anyio.sleep(0.05)
            ids = [(await agent.submit_messages([f"job {n}"])).submission_id for n in range(3)]
            await anyio.sleep(0.05)
            assert [s.status for s in agent.list_submissions()] == ["pending"] * 3
            assert [m.text for m in agent.messages] == ["gated chat turn"]  # not applied before their turn
            agent.gate.set()
        for submission_id in ids:
            await agent.wait_for_submission(submission_id, timeout=5)
        assert [m.text for m in agent.messages] == [
            "gated chat turn", "Echo: gated chat turn", "job 0", "Echo: job 0", "job 1", "Echo: job 1",
            "job 2", "Echo: job 2"]


async def test_cancel_a_pending_submission_and_a_running_one(data_dir: Path) -> None:
    async with open_agent(Ledgered, "cancel", data_dir=data_dir) as agent:
        running = await agent.submit_messages(["gated and cancelled"])
        waiting = await agent.submit_messages(["never runs"])
        await anyio.sleep(0.05)
        assert await agent.cancel_submission(waiting.submission_id, "not needed") == "cancelled"
        cancelled = agent.inspect_submission(waiting.submission_id)
        assert cancelled is not None and (cancelled.status, cancelled.error) == ("aborted", "not needed")
        assert await agent.cancel_submission(running.submission_id, "changed my mind") == "cancelled"
        stopped = await agent.wait_for_submission(running.submission_id, timeout=5)
        assert (stopped.status, stopped.error) == ("aborted", "changed my mind")
        assert [m.text for m in agent.messages if m.role == "user"] == ["gated and cancelled"]  # the other: never
        assert agent.model.calls == ["gated and cancelled"]
        assert await agent.cancel_submission("unknown") == "not_found"
        assert await agent.cancel_submission(running.submission_id) == "already_terminal"
        assert agent.inspect_submission(running.submission_id).error == "changed my mind"  # unchanged


async def test_list_delete_and_filters(data_dir: Path) -> None:
    async with open_agent(Ledgered, "list", data_dir=data_dir) as agent:
        agent.gate.set()
        ids = [(await agent.submit_messages([f"n{n}"])).submission_id for n in range(4)]
        for submission_id in ids:
            await agent.wait_for_submission(submission_id, timeout=5)
        pending = await agent.submit_messages(["gated pending"])
        assert [s.submission_id for s in agent.list_submissions(limit=2)] == ids[:2]
        assert len(agent.list_submissions(status="completed")) == 4
        assert len(agent.list_submissions(status=["completed", "pending", "running"])) == 5
        with pytest.raises(ProtocolError, match="unknown submission status"):
            agent.list_submissions(status="done")  # type: ignore[arg-type]
        assert agent.delete_submission(ids[0]) and not agent.delete_submission(ids[0])
        assert not agent.delete_submission(pending.submission_id)  # not finished: kept
        assert agent.delete_submissions(status="completed", limit=1) == 1
        assert agent.delete_submissions(completed_before=time.time() + 1) == 2
        assert [s.submission_id for s in agent.list_submissions()] == [pending.submission_id]
        await agent.cancel_submission(pending.submission_id)


async def test_a_plain_string_is_submitted_as_one_user_message(data_dir: Path) -> None:
    async with open_agent(Ledgered, "text", data_dir=data_dir) as agent:
        submission = await agent.submit_messages("webhook fired")
        one = await agent.submit_messages(Message.user("one message", id="m1"))
        await agent.wait_for_submission(one.submission_id, timeout=5)
        assert (await agent.wait_for_submission(submission.submission_id, timeout=5)).status == "completed"
        assert [(m.role, m.text) for m in agent.messages if m.role == "user"] == [
            ("user", "webhook fired"), ("user", "one message")]


@pytest.mark.parametrize("bad", [[], "", lambda history: ["x"], 42])
async def test_bad_submissions_are_refused_and_nothing_is_stored(data_dir: Path, bad: object) -> None:
    async with open_agent(Ledgered, "bad", data_dir=data_dir) as agent:
        with pytest.raises(ProtocolError):
            await agent.submit_messages(bad)  # type: ignore[arg-type]
        with pytest.raises(ProtocolError, match="JSON"):
            await agent.submit_messages(["x"], metadata={"not": object()})
        with pytest.raises(StorageError):
            await agent.submit_messages(["x"], session="no-such-session")
        assert agent.list_submissions() == [] and agent.messages == []
        with pytest.raises(StorageError):
            await agent.wait_for_submission("nope", timeout=1)


async def test_waiting_times_out(data_dir: Path) -> None:
    async with open_agent(Ledgered, "timeout", data_dir=data_dir) as agent:
        accepted = await agent.submit_messages(["gated forever"])
        with pytest.raises(TimeoutError):
            await agent.wait_for_submission(accepted.submission_id, timeout=0.05)
        await agent.cancel_submission(accepted.submission_id)


async def test_a_clear_skips_pending_submissions(data_dir: Path) -> None:
    async with open_agent(Ledgered, "clear", data_dir=data_dir) as agent:
        running = await agent.submit_messages(["gated"])
        pending = await agent.submit_messages(["later"])
        await anyio.sleep(0.05)
        await agent.clear_messages()
        skipped = await agent.wait_for_submission(pending.submission_id, timeout=5)
        assert skipped.status == "skipped"
        assert (await agent.wait_for_submission(running.submission_id, timeout=5)).status == "aborted"
        assert agent.messages == []


async def test_an_interrupted_submission_runs_again_once_without_duplicating_its_messages(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Ledgered, "crash")
    first = await agent.submit_messages(["gated, interrupted"])
    second = await agent.submit_messages(["after it"])
    await anyio.sleep(0.05)
    assert agent.inspect_submission(first.submission_id).status == "running"  # type: ignore[union-attr]
    await runtime.close()  # the process goes away mid-turn: nothing of the reply was stored

    restarted = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await restarted.get(Ledgered, "crash")
    agent.gate.set()
    assert (await agent.wait_for_submission(first.submission_id, timeout=5)).status == "completed"
    assert (await agent.wait_for_submission(second.submission_id, timeout=5)).status == "completed"
    assert [m.text for m in agent.messages] == ["gated, interrupted", "Echo: gated, interrupted", "after it",
                                                "Echo: after it"]
    await restarted.close()


async def test_a_running_row_whose_reply_was_stored_is_completed_without_a_model_call(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Ledgered, "window")
    agent.gate.set()
    done = await agent.submit_messages(["answered"])
    await agent.wait_for_submission(done.submission_id, timeout=5)
    # The process died between storing the reply and recording the status.
    agent.sql("UPDATE think_submissions SET status = 'running', completed_at = NULL")
    await runtime.close()
    restarted = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await restarted.get(Ledgered, "window")
    assert agent.inspect_submission(done.submission_id).status == "completed"  # type: ignore[union-attr]
    assert agent.model.calls == [] and len(agent.messages) == 2
    await restarted.close()


async def test_the_agent_is_busy_while_draining_so_it_is_not_hibernated(data_dir: Path) -> None:
    async with open_agent(Ledgered, "busy", data_dir=data_dir) as agent:
        accepted = await agent.submit_messages(["gated"])
        first = agent
    async with open_agent(Ledgered, "busy", data_dir=data_dir) as agent:
        assert agent is first  # still live: the lease ended while it was busy
        agent.gate.set()
        await agent.wait_for_submission(accepted.submission_id, timeout=5)
        await eventually(lambda: not agent.is_busy(), within=5)
    async with open_agent(Ledgered, "busy", data_dir=data_dir) as agent:
        assert agent is not first  # hibernated once idle, started again
