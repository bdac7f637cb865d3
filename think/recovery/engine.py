"""`ChatRecovery`: a turn a crash (or a stalled stream) interrupted is finished, within a budget.

Every turn path goes through `think.turns.runner`, which calls `begin()` once the turn's new
messages are saved (a fiber row, `think.recovery.store`) and `end()` when the turn has ended (the
row goes). Turns of durable submissions are left to `think.submissions`, which recovers them
itself: they get no fiber, so nothing is recovered twice.

When the agent starts, `think.turns.interrupted` has already rebuilt and saved the partial reply
of every stream the dead process left open. `start()` then takes each fiber left behind:

1. the stream had ended (the crash hit between the end of the turn and the row's delete): drop it
   (never a row whose attempt was spent: that recovery was cut off, in its backoff say, and goes on);
2. a person or a client owes an answer (an approval, a client tool call: `is_client_call`): *park*
   — the server's own cut-off calls are settled by their policy, the row goes and no budget is
   spent; the answer's own continuation finishes the turn;
3. budgets (`ChatRecoveryPolicy`): attempts, the no-progress window, the work budget; exhausted →
   the terminal message (replayed to every reconnecting client until a later turn), `on_exhausted`;
4. `on_chat_recovery(ctx)` decides `{persist, continue}`; in-flight tool calls are settled by their
   tool's `recovery` policy (`"rerun"`: run again first thing in the continuation; `"report"`: an
   "interrupted" error the model sees); completed calls have their output and never run again;
5. after a backoff, the turn is retried (nothing was streamed: the same user message is answered
   again, not added twice) or continued, under a new request id whose fiber inherits the incident
   (root request id, attempt, progress, work, stash). A continuation streams into the partial
   reply (`TurnRequest.extend`, see `think.turns.extend`): the answer stays one message.

Clients see `cf_agent_chat_recovering` (the `Recovering` fan-out event) while a recovery runs, and
a client that connects meanwhile gets it on connect.

Nobody has to reconnect for a turn to be finished: while turns run, a keep-alive schedule
(`WAKE_ID`, at most `wake_after` seconds ahead, moved on at most every `wake_after / 2`) sits in the
runtime's alarm index, so a restarted server wakes the agent by itself and `start()` recovers it.
When the schedule fires in a process whose turns are still running it is armed again; once no
fiber is left it lapses.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import uuid
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import anyio
import orjson

from think import observe
from think.messages import JSONObject, Message, TextPart, ToolPart
from think.recovery.cutoff import settle_cut_off_calls
from think.recovery.policy import (
    ChatRecoveryPolicy,
    ExhaustedContext,
    ExhaustionReason,
    RecoveryContext,
    RecoveryKind,
    RecoveryOutcome,
    decision_of,
)
from think.recovery.store import Fiber, FiberStore, now
from think.stream.fanout import Recovering, TurnFailed
from think.tools.tool import Tool, client_tool, waits_for_answer
from think.turns.trust import agent_tools
from think.turns.turn import TurnRequest

if TYPE_CHECKING:
    from think.agent import Think
    from think.sessions.session import Session

log = logging.getLogger("think.recovery")

DECLINED_TEXT = "Submission was interrupted and automatic continuation was declined."
_UNITS = frozenset({"text-start", "reasoning-start", "tool-input-available", "tool-output-available",
                    "tool-output-error"})
"""Chunks that count as one unit of work (and of forward progress): a content part or a tool step."""
WAKE_ID = "think:chat-recovery"
"""The id of the keep-alive schedule that wakes an agent whose turns a crash may have interrupted."""
WAKE_METHOD = "recovery.wake"
_CURRENT: contextvars.ContextVar[dict[int, str] | None] = contextvars.ContextVar("think_recovery_fiber", default=None)
"""The request id of the turn this task runs, per agent (by `id`): a parent's tool may run a child's turn."""


def _tools_of(entries: list[JSONObject]) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    for entry in entries:
        try:
            tools.append(client_tool(str(entry["name"]), description=str(entry.get("description") or ""),
                                     input_schema=entry.get("parameters")))
        except Exception:
            log.warning("ignoring a recorded client tool that is not valid: %r", entry)
    return tuple(tools)


@dataclass
class Watchdog:
    """The stream-stall watchdog of one turn: fires when no chunk came for `timeout` seconds."""

    timeout: float
    fired: bool = False
    _scope: anyio.CancelScope | None = None

    def touch(self) -> None:
        if self._scope is not None:
            self._scope.deadline = anyio.current_time() + self.timeout

    def __enter__(self) -> Watchdog:
        if self.timeout > 0:
            self._scope = anyio.CancelScope(deadline=anyio.current_time() + self.timeout)
            self._scope.__enter__()
        return self

    def __exit__(self, *exc: Any) -> bool:
        scope, self._scope = self._scope, None
        if scope is None:
            return False
        suppressed = bool(scope.__exit__(*exc))
        if scope.cancelled_caught:
            self.fired = True
        return suppressed


@dataclass
class ChatRecovery:
    """Durable fibers and their recovery for one agent. See the module docstring."""

    agent: Think
    store: FiberStore = field(init=False)
    outcomes: list[RecoveryOutcome] = field(default_factory=list)
    recovering: str | None = None
    """The root request id of the incident being recovered now (None: none)."""
    _lineage: dict[str, Fiber] = field(default_factory=dict)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _active: set[str] = field(default_factory=set)
    """Request ids of the turns this process runs now (their fibers are not interrupted)."""
    _armed_until: float = 0.0
    _claimed: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.store = FiberStore(self.agent.db)

    @property
    def policy(self) -> ChatRecoveryPolicy:
        return self.agent.chat_recovery

    # ---- the runner's side ------------------------------------------------------------------

    def begin(self, turn: TurnRequest, session: Session) -> None:
        """The turn's messages are being saved (in the same transaction) and its model is to run:
        write its fiber."""
        if not self.policy.enabled or self._is_submission(turn.request_id):
            return
        parent = self._lineage.pop(turn.request_id, None)
        latest_user = next((m.id for m in reversed(session.history()) if m.role == "user"), None)
        t = now()
        tools = [{"name": t.name, "description": t.description, "parameters": t.input_schema}
                 for t in turn.client_tools]
        fiber = Fiber(request_id=turn.request_id, session_id=session.id, continuation=turn.continuation,
                      latest_user_id=latest_user, last_body=dict(turn.body) if turn.body else None,
                      client_tools=tools, created_at=t,
                      root_request_id=parent.root_request_id if parent else turn.request_id,
                      attempt=parent.attempt if parent else 0, stash=parent.stash if parent else None,
                      incident_at=parent.incident_at if parent else t,
                      progress_at=parent.progress_at if parent else t, work=parent.work if parent else 0)
        try:
            with self.agent.db.transaction():
                self.store.write(fiber)
                if parent is not None:  # the interrupted turn's row hands over to this one
                    self.store.delete(parent.request_id)
        except Exception:
            log.exception("could not record the fiber of turn %s; it is not crash-safe", turn.request_id)
        self._active.add(turn.request_id)
        if t > self._armed_until - self.policy.wake_after / 2:
            self._arm(t)
        _CURRENT.set({**(_CURRENT.get() or {}), id(self.agent): turn.request_id})

    def withdraw(self, request_id: str) -> None:
        """A turn that `begin` recorded will not run after all (superseded before its model ran):
        its fiber goes."""
        self._active.discard(request_id)
        self.store.delete(request_id)

    def watchdog(self, turn: TurnRequest, override: float | None = None) -> Watchdog:
        """The stall watchdog of a turn: `override` seconds (the turn's), else the agent's."""
        seconds = override if override is not None else self.agent.chat_stream_stall_timeout
        return Watchdog(seconds if seconds and seconds > 0 and self.policy.enabled else 0.0)

    def can_recover(self, request_id: str) -> bool:
        """True when the running turn has a fiber (recovery may take it over from `end()`)."""
        return self.policy.enabled and self.store.get(request_id) is not None

    def settle(self, request_id: str) -> Fiber | None:
        """Delete the fiber of a turn that ended for good (not stalled, not transient), as one
        statement of the caller's open transaction (the turn's last commit, with its reply); the
        fiber goes to `end(..., settled=...)` once that transaction has committed."""
        return self.store.take(request_id)

    async def end(self, request_id: str, status: str, *, stalled: bool = False, transient: bool = False,
                  settled: Fiber | Literal[False] | None = False) -> bool:
        """The turn ended: its fiber goes; a stalled turn, or one whose model failed with a
        transient or rate-limit error (`transient`), goes through recovery instead (True).
        `settled`: what `settle()` already deleted with the reply (False: nothing was)."""
        self._active.discard(request_id)
        if settled is False and (stalled or transient):
            kept = self.store.get(request_id)
            if kept is None:
                return False
            log.warning("turn %s %s; it is recovered", request_id,
                        "stalled" if stalled else "failed with a transient error")
            self._spawn(self._recover(kept, stalled=True, transient=transient))
            return True
        fiber = self.store.take(request_id) if settled is False else settled
        if fiber is None:
            return False
        if fiber.attempt > 0:
            log.info("recovery of turn %s: attempt %d ended %s", fiber.root_request_id, fiber.attempt, status,
                     extra={"think": {"recovery": "ended", "root_request_id": fiber.root_request_id,
                                      "request_id": request_id, "attempt": fiber.attempt, "outcome": status}})
        if fiber.attempt > 0 and self.recovering is not None:
            root, self.recovering = self.recovering, None
            await self._publish(fiber, Recovering(root, False))
        return False

    def stash(self, data: Any) -> None:
        """Keep `data` with the running turn's fiber; recovery hands it back as `recovery_data`."""
        request_id = (_CURRENT.get() or {}).get(id(self.agent))
        if request_id is None or not self.store.set_stash(request_id, data):
            raise RuntimeError("stash() is only available inside a running chat turn")

    # ---- start-up -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Recover every fiber a dead process left (after the partial replies were rebuilt)."""
        if not self.policy.enabled:
            return
        for fiber in self.store.all():
            if fiber.request_id in self._active or any(
                    f.request_id == fiber.request_id for f in self._lineage.values()):
                continue  # running in this process, or its recovery turn is already on its way
            try:
                await self._recover(fiber)
            except Exception:
                log.exception("could not recover interrupted turn %s", fiber.request_id)

    async def wake(self, payload: Any = None) -> None:
        """The keep-alive schedule fired: recover what no turn of this process runs (after a
        restart `start()` has done that already), and stay armed while fibers are left."""
        await self.start()
        if self.store.all():
            self._arm(now())

    def _arm(self, t: float) -> None:
        horizon = self.policy.wake_after
        if horizon <= 0:
            return
        try:
            self.agent.schedule(horizon, WAKE_METHOD, id=WAKE_ID)
            self._armed_until = t + horizon
        except Exception:  # the database is closing; start-up recovery still covers the turn
            log.debug("could not arm the chat recovery wake-up", exc_info=True)

    async def stop(self) -> None:
        """Hibernation or shutdown: recovery tasks stop (their fibers stay for the next start); with
        no fiber left, the keep-alive schedule goes too, so an idle agent is not woken for nothing."""
        tasks, self._tasks = self._tasks, set()
        for task in tasks:
            task.cancel()
        if tasks:
            with anyio.CancelScope(shield=True):
                await asyncio.gather(*tasks, return_exceptions=True)
        if self._armed_until and not self.store.all():
            try:
                self.agent.cancel_schedule(WAKE_ID)
                self._armed_until = 0.0
            except Exception:
                log.debug("could not cancel the chat recovery wake-up", exc_info=True)

    def clear(self) -> None:
        """The chat was cleared: no turn of it is recovered any more."""
        for task in self._tasks:
            task.cancel()
        self._lineage.clear()
        self.store.clear()
        self.recovering = None
        self._active.clear()

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    # ---- recovering one fiber -----------------------------------------------------------------

    async def _recover(self, fiber: Fiber, *, stalled: bool = False, transient: bool = False) -> None:
        if fiber.request_id in self._claimed:
            return  # a wake-up found the fiber while a stall's recovery of it was deciding
        self._claimed.add(fiber.request_id)
        try:
            await self._recover_claimed(fiber, stalled=stalled, transient=transient)
        finally:
            self._claimed.discard(fiber.request_id)

    async def _recover_claimed(self, fiber: Fiber, *, stalled: bool, transient: bool = False) -> None:
        agent, policy = self.agent, self.policy
        rid = fiber.request_id
        try:
            session = agent.sessions.session(fiber.session_id)
        except Exception:
            self.store.delete(rid)
            self._note(RecoveryOutcome(rid, "skipped", fiber.attempt, "session is gone"))
            return
        info = agent.streams.get(rid)
        # A spent row (`counted`) is a recovery that was decided and had not begun its turn when
        # the process stopped (in its backoff, say): its stream is known to be cut off, whatever
        # became of it since (a client ACKed its replay, which marks it delivered). Only a row
        # never looked at can belong to a turn that ended with just the row's delete lost.
        if not stalled and not fiber.counted and info is not None and info.status in ("completed", "aborted", "error"):
            self.store.delete(rid)  # it ended; only the row's delete was lost
            self._note(RecoveryOutcome(rid, "ended", fiber.attempt))
            return
        chunks = agent.streams.chunks(rid) if info is not None else []
        units = 0
        for _, body in chunks:
            try:
                kind = orjson.loads(body).get("type")
            except (orjson.JSONDecodeError, AttributeError):
                continue
            if kind in _UNITS:
                units += 1
        history = session.history()
        partial = history[-1] if history and history[-1].role == "assistant" else None
        if partial is not None and info is not None and info.message_id not in (None, partial.id) and not units:
            partial = history[-1]  # an earlier reply (a continuation without content): continue it
        if self._pending_interaction(session, partial):
            # The server's own calls the crash cut off follow their policy (the continuation that
            # the person's or the client's answer starts runs `rerun` ones first); the row goes.
            self._settle_tools(session, partial, rerun=True)
            self.store.delete(rid)
            await self._publish(fiber, Recovering(fiber.root_request_id, False))
            self._note(RecoveryOutcome(rid, "parked", fiber.attempt))
            return

        t = now()
        counted = fiber.counted
        progress_at = t if units and not counted else fiber.progress_at
        work = fiber.work + (0 if counted else units)
        attempt = fiber.attempt + 1
        kind_of: RecoveryKind = "continue" if partial is not None else "retry"
        reason: ExhaustionReason | None = None
        if attempt > policy.max_attempts:
            reason = "max_attempts_exceeded"
        elif t - progress_at > policy.no_progress_timeout:
            reason = "no_progress_timeout"
        elif work > policy.max_recovery_work:
            reason = "work_budget_exceeded"
        partial_text = "".join(p.text for p in partial.parts if isinstance(p, TextPart)) if partial else ""
        if reason is not None:
            self._settle_tools(session, partial, rerun=False)
            await self._exhaust(fiber, reason, partial_text, attempt - 1)
            return

        ctx = RecoveryContext(
            incident_id=f"{fiber.root_request_id}:{fiber.latest_user_id or ''}",
            recovery_root_request_id=fiber.root_request_id, attempt=attempt, max_attempts=policy.max_attempts,
            recovery_kind=kind_of, stream_id=rid, request_id=rid, partial_text=partial_text,
            partial_parts=tuple(p.to_json() for p in partial.parts) if partial else (),
            recovery_data=fiber.stash, messages=tuple(history), last_body=fiber.last_body,
            last_client_tools=tuple(fiber.client_tools), created_at=fiber.incident_at)
        try:
            if attempt >= 2 and not await self._keep_recovering(ctx):
                self._settle_tools(session, partial, rerun=False)
                await self._exhaust(fiber, "recovery_aborted", partial_text, attempt - 1)
                return
            decision = decision_of(await agent.on_chat_recovery(ctx))
        except Exception:
            log.exception("recovery hooks raised; the interrupted turn %s is given up", rid)
            self._settle_tools(session, partial, rerun=False)
            await self._exhaust(fiber, "recovery_aborted", partial_text, attempt - 1)
            return
        if partial is not None and not decision.persist:
            partial = self._drop_unsettled_content(session, partial)
            kind_of = "continue" if partial is not None else "retry"
        self._settle_tools(session, partial, rerun=decision.continue_)
        if not decision.continue_:
            self.store.delete(rid)
            agent.streams.set_terminal(rid, DECLINED_TEXT)
            await self._publish(fiber, TurnFailed(rid, DECLINED_TEXT, fiber.continuation))
            await self._publish(fiber, Recovering(fiber.root_request_id, False))
            self.recovering = None
            self._note(RecoveryOutcome(rid, "declined", attempt))
            return

        # Spend the attempt durably before running it: a crash during the retry counts.
        spent = replace(fiber, attempt=attempt, progress_at=progress_at, work=work, counted=True)
        self.store.write(spent)
        new_id = str(uuid.uuid4())
        self._lineage[new_id] = spent
        self.recovering = fiber.root_request_id
        await self._publish(fiber, Recovering(fiber.root_request_id, True))
        self._note(RecoveryOutcome(rid, kind_of, attempt, recovery_request_id=new_id))
        turn = TurnRequest(request_id=new_id, messages=(), continuation=kind_of == "continue",
                           extend=kind_of == "continue", body=fiber.last_body,
                           client_tools=_tools_of(fiber.client_tools), session_id=fiber.session_id,
                           trigger="recovery-continue" if kind_of == "continue" else "recovery-retry")
        self._spawn(self._run(turn, policy.delay(attempt, transient=transient), recovers=rid, attempt=attempt,
                              kind=kind_of))

    async def _run(self, turn: TurnRequest, delay: float, *, recovers: str, attempt: int, kind: str) -> None:
        await anyio.sleep(delay)
        try:
            with observe.recovery(type(self.agent).kebab_name(), turn.request_id, recovers=recovers, attempt=attempt,
                                  kind=kind) as traced:
                result = await self.agent.run(turn)
                traced.finished(result.status, result.error)
        finally:
            self._lineage.pop(turn.request_id, None)

    async def _exhaust(self, fiber: Fiber, reason: ExhaustionReason, partial_text: str, attempt: int) -> None:
        text = self.policy.terminal_message
        self.store.delete(fiber.request_id)
        self.agent.streams.set_terminal(fiber.request_id, text)
        await self._publish(fiber, TurnFailed(fiber.request_id, text, fiber.continuation))
        await self._publish(fiber, Recovering(fiber.root_request_id, False))
        self.recovering = None
        self._note(RecoveryOutcome(fiber.request_id, "exhausted", attempt, reason))
        try:
            await self.agent.on_exhausted(ExhaustedContext(
                reason=reason, terminal_message=text, recovery_root_request_id=fiber.root_request_id,
                request_id=fiber.request_id, attempt=attempt, partial_text=partial_text,
                recovery_data=fiber.stash))
        except Exception:
            log.exception("on_exhausted raised; the terminal message stands")

    # ---- helpers ------------------------------------------------------------------------------

    async def _keep_recovering(self, ctx: RecoveryContext) -> bool:
        ask = self.policy.should_keep_recovering
        if ask is None:
            return True
        answer = ask(ctx)
        if inspect.isawaitable(answer):
            answer = await answer
        return bool(answer)

    def _pending_interaction(self, session: Session, partial: Message | None) -> bool:
        return partial is not None and waits_for_answer(partial, agent_tools(self.agent, session))

    def _settle_tools(self, session: Session, partial: Message | None, *, rerun: bool) -> None:
        settle_cut_off_calls(session, partial, agent_tools(self.agent, session), rerun=rerun)

    def _drop_unsettled_content(self, session: Session, partial: Message) -> Message | None:
        """`persist: False`: the partial keeps only its tool parts (settled results stay); a partial
        with none leaves the active transcript (its branch is kept, the leaf moves back)."""
        kept = [p for p in partial.parts if isinstance(p, ToolPart)]
        if kept:
            if len(kept) != len(partial.parts):
                partial.parts = list(kept)
                session.save([partial])
            return partial
        history = session.history()
        position = session.index_of(partial.id)
        if position:
            session.checkout(history[position - 1].id)
        return None

    def _is_submission(self, request_id: str) -> bool:
        submissions = self.agent.submissions
        return (request_id in submissions._running_request.values()
                or submissions.store.get(request_id) is not None)

    async def _publish(self, fiber: Fiber, event: Recovering | TurnFailed) -> None:
        try:
            await self.agent.sessions.session(fiber.session_id).fanout.publish(event)
        except Exception:
            log.exception("could not publish %s", type(event).__name__)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _note(self, outcome: RecoveryOutcome) -> None:
        self.outcomes.append(outcome)
        del self.outcomes[:-100]
        detail = f" as {outcome.recovery_request_id}" if outcome.recovery_request_id else ""
        detail += f" ({outcome.reason})" if outcome.reason else ""
        log.log(logging.WARNING if outcome.action == "exhausted" else logging.INFO,
                "recovery of interrupted turn %s: %s (attempt %d)%s", outcome.request_id, outcome.action,
                outcome.attempt, detail, extra={"think": {"recovery": outcome.action, "request_id": outcome.request_id,
                                                          "attempt": outcome.attempt, "reason": outcome.reason}})
