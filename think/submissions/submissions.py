"""`Submissions`: durable, idempotent, FIFO turns of one agent (`Think.submit_messages`).

    accepted = await agent.submit_messages(["Process webhook event 123"], idempotency_key="evt-123")
    done = await agent.wait_for_submission(accepted.submission_id, timeout=60)

Accepting writes a ledger row (see `store.py`) and returns before the model runs. A background
task owned by the agent drains the ledger in order, one submission at a time, through the same
turn queue as every other turn (so every hook runs). A submission becomes `running` when its turn
reaches the head of the queue, in the same step that appends its messages to the session; until
then it is `pending`, and cancelling it never touches the transcript.

Surviving a crash. While the ledger has unfinished rows, a one-shot schedule (`think:submissions`)
is kept at most `submission_wake_after` seconds in the future (a heartbeat moves it on while the
drain runs), so a restarted server's alarm loop wakes the agent even if nobody talks to it. When
the agent starts, rows left `running` by a process that died are recovered:

* messages not applied yet → back to `pending`;
* the turn had ended (its resumable stream says so) → that status (only the status was lost);
* its reply was cut short (the restart saved the partial reply) → the reply is continued by a
  continuation turn that streams into the partial (one answer, one message), as chat recovery
  does; the tool calls the crash cut off are settled by their tools' `recovery` policy first, by
  the code chat recovery uses (`think.recovery.cutoff`: `"rerun"` ones run again at the
  continuation's start);
* a reply follows and no stream says otherwise → `completed` (the crash hit between persisting
  the reply and recording the status);
* no reply yet → back to `pending`: the turn runs again over the same messages, which are not
  added twice (their ids are stable).

An agent instance is the only writer of its database, so unlike the original there is no
staleness threshold: a `running` row at start-up always belongs to a process that is gone.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import anyio
import orjson

from think import observe
from think._tasks import cancel_and_wait
from think.errors import ProtocolError, StorageError
from think.messages import Message
from think.observe.propagation import parent_for_work
from think.protocol.frames import ClientToolSchema
from think.recovery.cutoff import settle_cut_off_calls
from think.stream.fanout import TurnEvent, TurnFinished, TurnStarted
from think.submissions.store import STATUSES, Submission, SubmissionStatus, SubmissionStore
from think.turns.callbacks import MessageLike, to_message
from think.turns.continuation import (
    client_tool_schemas,
    decode_client_tools,
    encode_client_tools,
    remember_request,
    usable_client_tools,
)
from think.turns.trust import agent_tools
from think.turns.turn import TurnRequest, WhenBusy

if TYPE_CHECKING:
    from think.agent import Think

log = logging.getLogger("think.submissions")

WAKE_ID = "think:submissions"
"""The id of the schedule that wakes an agent with unfinished submissions."""
WAKE_METHOD = "submissions.wake"
CancelOutcome = Literal["cancelled", "already_terminal", "not_found"]
"""What `cancel_submission` did."""
CLIENT_TOOLS_OF = "think.submission.client_tools:"
"""Key-value prefix: the client tools a submission registered (until it finishes)."""
StatusListener = Callable[[Submission], Awaitable[None] | None]
_STATUS_OF: dict[str, SubmissionStatus] = {"completed": "completed", "aborted": "aborted", "skipped": "skipped",
                                           "error": "error"}


class Submissions:
    """The submission ledger of one agent and the task that drains it."""

    def __init__(self, agent: Think) -> None:
        self.agent = agent
        self.store = SubmissionStore(agent.db)
        self._task: asyncio.Task[None] | None = None
        self._changed: anyio.Event | None = None
        self._cancel_reasons: dict[str, str | None] = {}
        self._steering: dict[str, asyncio.Task[None]] = {}
        """Submissions accepted with `when_busy="steer"` waiting in (or running after) a turn's inbox."""
        self._running_request: dict[str, str] = {}
        """Submission id → the request id of its turn (they differ for a continued reply)."""
        self._watchers: list[StatusListener] = []
        self._trace_parents: dict[str, Any] = {}
        """The trace context each submission was made in, while it waits in this process (its
        `think.submission` span joins that trace; none after a restart)."""

    # ---- accepting -------------------------------------------------------------------------------

    async def submit(self, messages: MessageLike | Sequence[MessageLike], *, submission_id: str | None = None,
                     idempotency_key: str | None = None, metadata: Any = None, session: str = "",
                     when_busy: WhenBusy = "queue",
                     client_tools: Sequence[ClientToolSchema | Mapping[str, Any]] | None = None) -> Submission:
        if when_busy not in ("queue", "steer"):
            raise ProtocolError(f"when_busy must be 'queue' or 'steer', not {when_busy!r}")
        if isinstance(messages, str | Message | dict):
            messages = [messages] if messages != "" else []
        if callable(messages) or not isinstance(messages, Sequence):
            raise ProtocolError("submit_messages takes a message (a string, a Message, a dict) or a list of them "
                                f"(a function cannot be stored durably); got {type(messages).__name__}")
        if not messages:
            raise ProtocolError("submit_messages needs at least one message")
        for value, what in ((submission_id, "submission_id"), (idempotency_key, "idempotency_key")):
            if value is not None and (not isinstance(value, str) or not value or len(value) > 512):
                raise ProtocolError(f"{what} must be a non-empty string of at most 512 characters")
        resolved = [to_message(m) for m in messages]
        try:
            orjson.dumps(metadata)
        except TypeError as exc:
            raise ProtocolError(f"submission metadata must be JSON-serializable: {exc}") from exc
        self.agent.sessions.session(session)  # an unknown session fails now, not when it runs
        schemas = None if client_tools is None else client_tool_schemas(client_tools)
        by_id = self.store.get(submission_id) if submission_id is not None else None
        by_key = self.store.by_key(idempotency_key) if idempotency_key is not None else None
        if by_id is not None and idempotency_key is not None and by_id.idempotency_key != idempotency_key:
            raise ProtocolError(f"submission {submission_id!r} exists with another idempotency key")
        if by_key is not None and submission_id is not None and by_key.submission_id != submission_id:
            raise ProtocolError(f"idempotency key {idempotency_key!r} belongs to submission "
                                f"{by_key.submission_id!r}, not {submission_id!r}")
        existing = by_id or by_key
        if existing is not None:
            if existing.status == "pending":
                self.kick()
            return replace(existing, accepted=False)
        kept = None if schemas is None else usable_client_tools(self.agent, schemas, session)[0]
        with self.agent.db.transaction():  # the row and its client tools, before the ack: a restart has both
            created = self.store.insert(submission_id or str(uuid.uuid4()), resolved, key=idempotency_key,
                                        metadata=metadata, session_id=session)
            if kept is not None:
                self.agent.kv_set(CLIENT_TOOLS_OF + created.submission_id, encode_client_tools(kept))
        if (parent := parent_for_work()) is not None:
            self._trace_parents[created.submission_id] = parent
        self._arm()  # stored and armed before it is acknowledged: a kill from here on loses nothing
        if when_busy != "steer" or not self._steer(created):
            self.kick()
        await self._report(created)
        return created

    # ---- reading ---------------------------------------------------------------------------------

    def inspect(self, submission_id: str) -> Submission | None:
        return self.store.get(submission_id)

    def list(self, status: SubmissionStatus | Sequence[SubmissionStatus] | None = None,
             limit: int | None = None) -> list[Submission]:
        statuses = [status] if isinstance(status, str) else list(status or ())
        unknown = [s for s in statuses if s not in STATUSES]
        if unknown:
            raise ProtocolError(f"unknown submission status {unknown[0]!r}; use one of {', '.join(STATUSES)}")
        return self.store.select(statuses, limit)

    async def wait(self, submission_id: str, *, timeout: float | None = None) -> Submission:  # noqa: ASYNC109
        """The submission once it has finished; `TimeoutError` after `timeout` seconds."""
        with anyio.fail_after(timeout):
            while True:
                changed = self._changed_event()
                current = self.store.get(submission_id)
                if current is None:
                    raise StorageError(f"no submission {submission_id!r}")
                if current.done:
                    return current
                await changed.wait()

    @property
    def busy(self) -> bool:
        """True while the drain task runs (the agent must not be hibernated then)."""
        return (self._task is not None and not self._task.done()) or bool(self._steering)

    def unfinished(self) -> int:
        return self.store.count("pending", "running")

    # ---- cancelling and deleting -----------------------------------------------------------------

    async def cancel(self, submission_id: str, reason: str | None = None) -> CancelOutcome:
        current = self.store.get(submission_id)
        if current is None:
            return "not_found"
        if current.done:
            return "already_terminal"
        if current.status == "pending":
            if submission_id in self._steering:  # not a reason for the running turn to stop at its boundary
                self.agent.cancellations.cancel_pending(submission_id)
            if self.store.finish(submission_id, "aborted", reason or "Cancelled"):
                await self._changed_status(submission_id)
        else:
            self._cancel_reasons[submission_id] = reason
            request_id = self._running_request.get(submission_id, submission_id)
            if not self.agent.cancel_chat(request_id):
                self.agent.cancellations.cancel_pending(request_id)
        return "cancelled"

    def delete(self, submission_id: str) -> bool:
        """Delete a finished submission's record; False if it is unknown or not finished."""
        return self.store.delete(submission_id)

    def delete_many(self, *, status: SubmissionStatus | Sequence[SubmissionStatus] | None = None,
                    completed_before: float | None = None, limit: int | None = None) -> int:
        statuses = [status] if isinstance(status, str) else (list(status) if status is not None else None)
        return self.store.delete_many(statuses, completed_before, limit)

    async def skip_pending(self, session: str = "") -> int:
        """A clear: pending submissions of the session will not run (`skipped`)."""
        skipped = [s for s in self.store.select(["pending"]) if self.store.messages(s.submission_id)[0] == session]
        for sub in skipped:
            if self.store.finish(sub.submission_id, "skipped", "The chat was cleared before it ran"):
                await self._changed_status(sub.submission_id)
        return len(skipped)

    # ---- the drain -------------------------------------------------------------------------------

    def start(self) -> None:
        """At start-up: recover rows a dead process left `running`, then drain what is left."""
        for sub in self.store.running():
            self._recover(sub)
        if self.unfinished():
            self._arm()
            self.kick()
        else:
            self._disarm()

    def wake(self, payload: Any = None) -> None:
        """The wake schedule fired (a restarted process, or a stuck drain): drain now."""
        if self.unfinished():
            self.kick()

    def kick(self) -> None:
        """Start the drain task unless it runs (it runs in a fresh context: never inside a turn)."""
        if self.busy:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            log.warning("no event loop to run submissions on; they run when the agent next starts")
            return
        self._task = loop.create_task(self._drain(), name=f"think-submissions:{self.agent.name}",
                                      context=contextvars.Context())

    async def stop(self) -> None:
        """Cancel the drain (hibernation, shutdown); an interrupted submission is recovered later."""
        task, self._task = self._task, None
        await cancel_and_wait(task)
        for steering in list(self._steering.values()):
            await cancel_and_wait(steering)

    async def _drain(self) -> None:
        try:
            while True:
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(self._heartbeat)
                    while (sub := self.store.next_pending(self._steering)) is not None:
                        await self._run(sub)
                        if not self.unfinished():
                            self._disarm()
                        await self._changed_status(sub.submission_id)
                    tasks.cancel_scope.cancel()
                # No await from this check to the end: a submission accepted meanwhile is seen here,
                # or it starts a new drain (this one no longer counts as running).
                if self.store.next_pending(self._steering) is None:
                    if not self.unfinished():
                        self._disarm()
                    break
        except Exception:
            log.exception("the submission drain of %s failed; it resumes on the next wake", self.agent.name)
        finally:
            if self._task is asyncio.current_task():
                self._task = None
            self._notify()

    def _steer(self, sub: Submission) -> bool:
        """Run `sub` as a steered turn now, outside the drain; False when no turn of its session runs
        (the drain runs it as the next turn). A kill before it is taken leaves it `pending`."""
        session_id = self.store.messages(sub.submission_id)[0]
        if self.agent.steering.host_request_id(session_id) is None:
            return False
        submission_id = sub.submission_id

        async def steer() -> None:
            try:
                await self._run(sub, when_busy="steer")
            finally:
                self._steering.pop(submission_id, None)
            await self._changed_status(submission_id)
            if not self.unfinished():
                self._disarm()
            else:
                self.kick()

        self._steering[submission_id] = asyncio.get_running_loop().create_task(
            steer(), name=f"think-steer:{submission_id}", context=contextvars.Context())
        return True

    async def _heartbeat(self) -> None:
        interval = max(0.05, float(self.agent.submission_wake_after) / 2)
        while True:
            self._arm()
            await anyio.sleep(interval)

    async def _run(self, sub: Submission, *, when_busy: WhenBusy = "queue") -> None:
        submission_id = sub.submission_id
        session_id, messages = self.store.messages(submission_id)
        try:
            session = self.agent.sessions.session(session_id)
        except Exception as exc:
            self.store.finish(submission_id, "error", f"{type(exc).__name__}: {exc}")
            return

        # A reply a restart interrupted is continued (its partial is stored); otherwise the turn
        # runs with the submission's messages (again, after a restart: saving them is a no-op).
        resume = self.store.recovery(submission_id) == "continue"
        request_id = str(uuid.uuid4()) if resume else submission_id
        registered = self.agent.kv_get(CLIENT_TOOLS_OF + submission_id)
        if registered is not None:  # answers and continuations in the session use them from now on
            remember_request(self.agent, [ClientToolSchema(name=t["name"], description=t["description"],
                                                           parameters=t["parameters"])
                                          for t in registered], None, replace_body=False, session=session_id)

        def claim(history: list[Message]) -> list[Message] | None:
            # At the head of the queue, in the step that applies the messages: pending → running.
            if not self.store.start(submission_id):
                return None
            return [] if resume else messages

        async def listen(event: TurnEvent) -> None:
            if isinstance(event, TurnStarted) and event.request_id == request_id:
                await self._changed_status(submission_id)
            elif isinstance(event, TurnFinished) and event.request_id == request_id:
                self._settle(submission_id, event.outcome, event.error)  # as soon as the reply is stored

        unsubscribe = session.fanout.subscribe(listen)
        self._running_request[submission_id] = request_id
        try:
            with observe.submission(type(self.agent).kebab_name(), submission_id, resume=resume,
                                    parent=self._trace_parents.pop(submission_id, None)) as traced:
                result = await self.agent.run(TurnRequest(request_id=request_id, messages=claim,
                                                          continuation=resume, extend=resume, session_id=session_id,
                                                          when_busy=when_busy, trigger="submission",
                                                          client_tools=decode_client_tools(registered)))
                traced.finished(result.status, result.error)
        except Exception as exc:
            log.exception("submission %s crashed", submission_id)
            self._settle(submission_id, "error", f"{type(exc).__name__}: {exc}")
        else:
            self._settle(submission_id, result.status, result.error)
        finally:
            unsubscribe()
            self._running_request.pop(submission_id, None)
        self._cancel_reasons.pop(submission_id, None)

    def _settle(self, submission_id: str, outcome: str, error: str | None) -> None:
        status = _STATUS_OF.get(outcome, "error")
        if status == "aborted" and submission_id in self._cancel_reasons:
            error = self._cancel_reasons[submission_id] or "Cancelled"
        elif status == "skipped":
            error = error or "The chat was cleared before it ran"
        self.store.finish(submission_id, status, error)
        self.agent.kv_set(CLIENT_TOOLS_OF + submission_id, None)  # the session keeps them (remember_request)

    def _recover(self, sub: Submission) -> None:
        submission_id = sub.submission_id
        session_id, messages = self.store.messages(submission_id)
        try:
            session = self.agent.sessions.session(session_id)
        except Exception as exc:
            self.store.finish(submission_id, "error", f"interrupted, and its session is gone: {exc}")
            return
        stream = self.agent.streams.get(submission_id)
        if stream is not None and stream.status in _STATUS_OF:  # it ended; only its status was lost
            self.store.finish(submission_id, _STATUS_OF[stream.status])
            return
        last = messages[-1].id if messages else None
        if last is None or session.get_message(last) is None:
            log.info("submission %s had not started; it runs now", submission_id)
            self.store.requeue(submission_id)
            return
        position = session.index_of(last)
        replied = position is None or any(m.role == "assistant" for m in session.history()[position + 1:])
        if replied and stream is not None:  # the restart cut its reply short (the partial is stored)
            log.info("submission %s was interrupted mid-reply; the reply is continued", submission_id)
            history = session.history()
            if history[-1].role == "assistant":  # its cut-off tool calls follow their tools' policy
                settle_cut_off_calls(session, history[-1], agent_tools(self.agent, session), rerun=True)
            self.store.requeue(submission_id, recovery="continue")
        elif replied:
            log.info("submission %s was answered before the process stopped", submission_id)
            self.store.finish(submission_id, "completed")
        else:
            log.info("submission %s was interrupted before its reply; it runs again", submission_id)
            self.store.requeue(submission_id)

    # ---- wake-up schedule, status changes ----------------------------------------------------------

    def _arm(self) -> None:
        try:
            self.agent.schedule(float(self.agent.submission_wake_after), WAKE_METHOD, id=WAKE_ID)
        except Exception:  # the database is closing: start-up recovery covers it
            log.debug("could not arm the submissions wake-up", exc_info=True)

    def _disarm(self) -> None:
        if any(task.id == WAKE_ID for task in self.agent.get_schedules()):
            self.agent.cancel_schedule(WAKE_ID)

    def _changed_event(self) -> anyio.Event:
        if self._changed is None:
            self._changed = anyio.Event()
        return self._changed

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def _changed_status(self, submission_id: str) -> None:
        current = self.store.get(submission_id)
        self._notify()
        if current is not None:
            await self._report(current)

    def watch(self, listener: StatusListener) -> Callable[[], None]:
        """Call `listener` (sync or async) with each status change, after `on_submission_status`;
        returns the function that stops it (a harness's `subscribe` uses this)."""
        self._watchers.append(listener)

        def stop() -> None:
            if listener in self._watchers:
                self._watchers.remove(listener)

        return stop

    async def _report(self, submission: Submission) -> None:
        for listener in (self.agent.on_submission_status, *self._watchers):
            try:
                result = listener(submission)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("a submission status listener raised; the submission goes on")

