"""The turn methods of `Think` (a mixin): every way to start, answer and stop a turn.

`save_messages`, `continue_last_turn`, `chat` and `run_turn` all end in `run()`, which admits the
turn to the agent's FIFO and runs the pipeline (`think.turns.runner`). The blocking ones refuse to
run inside a turn of the same agent (it would wait for itself): `_IN_TURN` knows which agents'
turns the current task runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio
import orjson

from think.errors import ProtocolError, TurnError
from think.messages import JSONObject, Message
from think.tools.tool import Tool, waits_for_answer
from think.turns import callbacks
from think.turns.callbacks import MessageLike, to_message
from think.turns.continuation import ToolAnswer, continue_session
from think.turns.runner import new_request_id, run_turn
from think.turns.trust import agent_tools
from think.turns.turn import ActiveTurn, TurnRequest, TurnResult, WhenBusy
from think.turns.writer import write_data

if TYPE_CHECKING:
    from think.agent import Think
    from think.submissions.store import Submission

log = logging.getLogger("think.turns")
_IN_TURN: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar("think_in_turn", default=frozenset())
"""The agents (by `id`) whose turn this task runs (with the tools and hooks it runs): a turn of a
parent may drive a child's turn, never one of its own."""


def _when_busy(value: object) -> WhenBusy:
    if value not in ("queue", "steer"):
        raise ProtocolError(f"when_busy must be 'queue' or 'steer', not {value!r}")
    return "steer" if value == "steer" else "queue"


def in_turn(agent: object) -> bool:
    """True inside a turn of `agent` (its tools, its hooks)."""
    return id(agent) in _IN_TURN.get()


def _refuse_inside_turn(agent: object, api: str) -> None:
    if in_turn(agent):
        raise TurnError(f"{api} cannot be called from inside an active turn (it would wait for itself); "
                        "use submit_messages() (run_turn(mode='submit')) or add_messages() instead")


_background: set[asyncio.Task[TurnResult]] = set()


def _turn_task_done(task: asyncio.Task[TurnResult]) -> None:
    _background.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("a background turn crashed", exc_info=task.exception())


class TurnAPI:
    """Starting, answering and stopping turns (mixed into `Think`)."""

    _turns_running: int

    @property
    def _think(self) -> Think:
        return cast("Think", self)

    async def run(self, turn: TurnRequest) -> TurnResult:
        """Admit a turn and wait for it to finish (the entry every turn path goes through)."""
        _refuse_inside_turn(self, "a blocking turn API")
        self._turns_running += 1
        token = _IN_TURN.set(_IN_TURN.get() | {id(self)})
        try:
            return await run_turn(self._think, turn)
        finally:
            _IN_TURN.reset(token)
            self._turns_running -= 1

    def start_turn(self, turn: TurnRequest) -> asyncio.Task[TurnResult]:
        """`run(turn)` in a task of its own; the agent is busy (`is_busy()`) from the moment this
        returns, so nothing else slips in before the turn is admitted. A failure of the task
        itself (not of the turn, which `run` reports) is logged."""
        _refuse_inside_turn(self, "start_turn()")
        self._turns_running += 1  # handed over to run() below, in the task's first step
        started = False

        async def run() -> TurnResult:
            nonlocal started
            started = True
            self._turns_running -= 1
            return await self.run(turn)

        def done(task: asyncio.Task[TurnResult]) -> None:
            if not started:  # cancelled before its first step
                self._turns_running -= 1
            _turn_task_done(task)

        task = asyncio.get_running_loop().create_task(run(), context=contextvars.Context())
        _background.add(task)
        task.add_done_callback(done)
        return task

    async def save_messages(
        self,
        messages: MessageLike | Sequence[MessageLike] | Callable[[list[Message]], Sequence[MessageLike]],
        *,
        request_id: str | None = None,
        body: JSONObject | None = None,
        session: str = "",
        signal: callbacks.Signal | None = None,
        when_busy: WhenBusy = "queue",
    ) -> TurnResult:
        """Save messages (usually a user message) and run a turn that answers them.

        `messages` is one message (a string is a user message) or a list of them. A function
        instead is called with the transcript when the turn reaches the front of the queue.
        Returns when the reply is persisted: `status` is `completed`, `error`,
        `aborted` (cancelled) or `skipped` (the chat was cleared while it waited). `session` is
        the id of the session to use (default: the root session, the chat transcript); setting
        `signal` (an `anyio.Event`) cancels the turn. `when_busy="steer"`: if a turn of the
        session runs, the messages join it at its next step boundary instead of waiting for it
        (`think.turns.steer`); not durable before then (`submit_messages(when_busy="steer")` is).
        """
        if callable(messages):
            fn = messages

            def resolved(history: list[Message]) -> list[Message]:
                return [to_message(m) for m in fn(history)]

            payload: Any = resolved
        else:
            listed = [messages] if isinstance(messages, str | Message | dict) else messages
            if not isinstance(listed, Sequence):
                raise ProtocolError("save_messages takes a message (a string, a Message, a dict), a list of them "
                                    f"or a function returning one; got {type(messages).__name__}")
            payload = [to_message(m) for m in listed]
        return await callbacks.run_with_signal(self._think, TurnRequest(
            request_id=request_id or new_request_id(), messages=payload, body=body, session_id=session,
            when_busy=_when_busy(when_busy)), signal)

    async def continue_last_turn(self, body: JSONObject | None = None, *, session: str = "",
                                 signal: callbacks.Signal | None = None) -> TurnResult:
        """Run a continuation turn when the newest message is the assistant's; else `skipped`."""
        history = self._think.sessions.session(session).history()
        if not history or history[-1].role != "assistant":
            return TurnResult(request_id="", status="skipped", continuation=True)
        return await callbacks.run_with_signal(self._think, TurnRequest(
            request_id=new_request_id(), continuation=True, body=body, session_id=session), signal)

    async def regenerate(self, message_id: str | None = None, *, body: JSONObject | None = None, session: str = "",
                         signal: callbacks.Signal | None = None) -> TurnResult:
        """Answer a question again: the newest answer (default), the answer `message_id`, or the
        reply to the user message `message_id`. The new answer is a sibling branch of the old one
        (`session.get_branches`), which stays stored; what came after it leaves the active branch.
        `skipped` when there is nothing to answer; an id not on the active branch is a `ProtocolError`."""
        history = self._think.sessions.session(session).history()
        index = len(history) - 1 if message_id is None else next(
            (i for i, m in enumerate(history) if m.id == message_id), None)
        if index is None:
            raise ProtocolError(f"regenerate: no message {message_id!r} on the session's active branch")
        while index >= 0 and history[index].role == "assistant":
            index -= 1  # back to the question the answer (and its continuations) replied to
        if index < 0:
            return TurnResult(request_id="", status="skipped")
        return await callbacks.run_with_signal(self._think, TurnRequest(
            request_id=new_request_id(), parent_id=history[index].id, body=body, session_id=session), signal)

    async def chat(self, input: callbacks.TurnInput, callback: object | None = None, *,
                   signal: callbacks.Signal | None = None, client_tools: Sequence[Tool] = (),
                   body: JSONObject | None = None, metadata: JSONObject | None = None,
                   session: str = "") -> TurnResult:
        """Run a turn and stream it to `callback`: `on_start({"requestId"})` before it is queued,
        `on_event(chunk_json)` per chunk, then `on_done()` or `on_error(message)` (see
        `think.turns.callbacks`). How parents drive sub-agents; `metadata` is stamped on the user
        messages as `metadata.turnMetadata`."""
        _refuse_inside_turn(self, "chat()")
        return await callbacks.chat(self._think, input, callback, request_id=new_request_id(), signal=signal,
                                    client_tools=client_tools, body=body,
                                    metadata={"turnMetadata": metadata} if metadata else None, session=session)

    async def run_turn(self, mode: Literal["wait", "submit", "stream"] = "wait", *,
                       input: callbacks.TurnInput | None = None, continuation: bool = False,
                       body: JSONObject | None = None, callback: object | None = None,
                       signal: callbacks.Signal | None = None, submission_id: str | None = None,
                       idempotency_key: str | None = None, metadata: Any = None,
                       session: str = "") -> TurnResult | Submission:
        """One entry for every way to start a turn.

        * `"wait"`: `input` (or `continuation=True`) → the `TurnResult`, as `save_messages` /
          `continue_last_turn`; an empty input is `skipped` without a turn.
        * `"submit"`: `input` (a message or a list, no function) → the `Submission`, as `submit_messages`.
        * `"stream"`: `input` and `callback` → the `TurnResult`, as `chat`.

        The blocking modes raise `TurnError` inside a turn; `"submit"` works anywhere.
        """
        if mode == "submit":
            if input is None or continuation or callable(input):
                raise ProtocolError("run_turn(mode='submit') takes an input: a message or a list of messages")
            return await self._think.submit_messages(input, submission_id=submission_id,
                                              idempotency_key=idempotency_key, metadata=metadata, session=session)
        if mode not in ("wait", "stream"):
            raise ProtocolError(f"run_turn mode must be 'wait', 'submit' or 'stream', not {mode!r}")
        _refuse_inside_turn(self, f"run_turn(mode={mode!r})")
        if mode == "stream":
            if input is None:
                raise ProtocolError("run_turn(mode='stream') takes an input")
            return await self.chat(input, callback, signal=signal, body=body, session=session)
        if (input is None) == (not continuation):
            raise ProtocolError("run_turn(mode='wait') takes exactly one of input and continuation=True")
        if continuation:
            return await self.continue_last_turn(body, session=session, signal=signal)
        assert input is not None
        if callbacks.is_empty(input):
            return TurnResult(request_id="", status="skipped")
        messages = callbacks.turn_messages(input)
        return await callbacks.run_with_signal(self._think, TurnRequest(
            request_id=new_request_id(), messages=messages, body=body, session_id=session), signal)

    def has_pending_interaction(self) -> bool:
        """True while the newest assistant message waits for a person or a client: a tool call
        asking for approval, or a client tool call without its output."""
        history = self._think.session.history()
        last = next((m for m in reversed(history) if m.role == "assistant"), None)
        if last is None:
            return False
        return waits_for_answer(last, agent_tools(self._think))

    async def wait_until_stable(self, *, timeout: float | None = None) -> bool:  # noqa: ASYNC109
        """Wait until no turn runs or waits, no submission is unfinished and nothing waits for a
        person or a client; False if `timeout` seconds pass first."""
        with anyio.move_on_after(timeout):
            # Several conditions and no single event that covers them all: poll.
            while self._think.is_busy() or self._think.submissions.unfinished() or self.has_pending_interaction():  # noqa: ASYNC110
                await anyio.sleep(0.01)
            return True
        return False

    async def add_tool_result(self, tool_call_id: str, output: Any = None, *, error: str | None = None,
                              auto_continue: bool = True, session: str = "") -> ToolAnswer:
        """Give a call that waits for the client its output (or its `error`), as the browser's
        `cf_agent_tool_result` does. A continuation turn answers once every call of the batch has
        its answer (see `ToolAnswer.continuation`), as with the JS clients' default;
        `auto_continue=False` leaves it to a later `continue_last_turn()`. In another `session`
        the continuation runs before this returns (`think.turns.continuation.continue_session`)."""
        message = await self._think.tool_updates.add_result(tool_call_id, output=output, error_text=error,
                                                            is_error=error is not None, session=session)
        if session:
            return await continue_session(self._think, session, message, auto_continue)
        return await self._think.continuations.after_answer(message, auto_continue)

    async def approve_tool_call(self, tool_call_id: str, approved: bool, reason: str | None = None, *,
                                auto_continue: bool = True, session: str = "") -> ToolAnswer:
        """Answer a call that waits for approval, as `cf_agent_tool_approval` does: approved, the
        server runs it at the start of the continuation; denied, it ends `output-denied`. The
        continuation starts by itself unless `auto_continue=False` (as `add_tool_result`)."""
        message = await self._think.tool_updates.approve(tool_call_id, approved, reason=reason, session=session)
        if session:
            return await continue_session(self._think, session, message, auto_continue)
        return await self._think.continuations.after_answer(message, auto_continue)

    async def write_data(self, name: str, data: Any, *, id: str | None = None, transient: bool = False) -> bool:
        """Add a `data-<name>` part to the running turn's reply, from a tool or a hook; False when
        called outside a turn of this agent. See `think.turns.writer`."""
        return await write_data(self, name, data, id=id, transient=transient)

    @property
    def active_turn(self) -> ActiveTurn | None:
        """The turn running now: `request_id`, `session_id`, `trigger`, `continuation` and its
        cancel `signal` (None when no turn runs)."""
        return self._think.turn_queue.active_turn

    def message_metadata(self, metadata: Mapping[str, Any] | None = None, /, **fields: Any) -> bool:
        """Stamp server metadata on the running turn's reply: the fields are merged into the
        persisted assistant message's `metadata` (later calls win a key). From a tool or a hook;
        False when no turn of this agent runs. Values must be JSON. Clients never set these: their
        input only reaches user messages (see `think.turns.trust`)."""
        active = self._think.turn_queue.active_turn
        values = {**(metadata or {}), **fields}
        try:
            orjson.dumps(values)
        except TypeError as exc:
            raise ProtocolError(f"message_metadata values must be JSON: {exc}") from exc
        if active is None or not in_turn(self):
            return False
        active.message_metadata.update(values)
        return True

    def cancel_chat(self, request_id: str) -> bool:
        """Stop a running turn (its partial reply is kept); True if it was running."""
        return self._think.cancellations.cancel(request_id)

    def cancel_all_chats(self) -> int:
        return self._think.cancellations.cancel_all()
