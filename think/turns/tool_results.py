"""Tool results and approvals from outside the model: applied to the stored transcript in order.

A turn that reaches a call the server does not run itself ends with the call waiting: a client
tool (`input-available`) waits for its output, a `needs_approval` tool (`approval-requested`)
for a person's answer. Those answers arrive later (`cf_agent_tool_result`, `cf_agent_tool_approval`,
or `Think.add_tool_result` / `Think.approve_tool_call`) and are applied here, one at a time in
arrival order, to the first part with that tool call id that can still take them. Every change is
saved and published as `MessageChanged`. Settled parts and unknown ids are left alone.

An answer from a client (`client_result`, `client_approval`) is first put to `think.turns.trust`
under the same lock, so nothing changes between the check and the write: a result only for a
client tool's waiting call, an approval only for a pending one; anything else raises `Refused`
and changes nothing. The Python methods are for server code, which is trusted.

A later turn may also write the output of a call made in an earlier message (an approved server
tool runs at the start of the continuation): `settle_earlier_calls` writes it into that message,
first write wins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from think.hooks import ToolCall
from think.messages import JSONObject, Message, ToolApproval, ToolPart
from think.protocol.limits import IN_PART, check_depth
from think.stream.fanout import Fanout, MessageChanged, TurnEvent, TurnFinished
from think.stream.fold import apply_tool_output, normalize_input
from think.turns.trust import APPROVAL_STATES, RESULT_STATES, ToolKinds, check_approval, check_result

if TYPE_CHECKING:
    from think.agent import Think
    from think.sessions.session import Session

DENIED_BY_USER = "Tool execution denied by user"
"""The error text of an `output-error` result that came without one (the AI SDK's default)."""
TURN_END_WAIT = 10.0
"""Seconds a result for a call of the running turn waits for that turn to be saved."""
_TAKES_RESULT = frozenset({"input-streaming", "input-available", "approval-requested", "approval-responded"})
_TAKES_APPROVAL = frozenset({"input-available", "approval-requested"})
_WAITING = frozenset({"input-available", "approval-requested"})
ANY_TOOL_STATE = frozenset({*_TAKES_RESULT, "output-available", "output-error", "output-denied"})

Judge = Callable[[ToolPart | None], None]
"""Checks a client's answer against the newest part of its call (None: no such call); raises."""


def find_part(messages: Sequence[Message], tool_call_id: str,
              states: frozenset[str]) -> tuple[Message, int] | None:
    """The newest message with a part for `tool_call_id` in one of `states`, and the part's index."""
    for message in reversed(messages):
        if message.role != "assistant":
            continue
        for index, part in enumerate(message.parts):
            if isinstance(part, ToolPart) and part.tool_call_id == tool_call_id and part.state in states:
                return message, index
    return None


def _part(message: Message, index: int) -> ToolPart:
    part = message.parts[index]
    assert isinstance(part, ToolPart)
    return part


def set_result(message: Message, index: int, *, output: Any = None, error_text: str | None = None,
               is_error: bool = False) -> None:
    """Settle a part with a result: `output-available`, or `output-error` when `is_error`."""
    part = _part(message, index)
    if is_error:
        part.state = "output-error"
        part.error_text = error_text or DENIED_BY_USER
        part.output = None
    else:
        part.state = "output-available"
        part.output = output
        part.preliminary = False
    part.input = normalize_input(part.input) if not isinstance(part.input, dict) else part.input


def set_approval(message: Message, index: int, *, approved: bool, reason: str | None = None) -> None:
    """Answer an approval: `approval-responded` (the server runs the call next) or `output-denied`."""
    part = _part(message, index)
    previous = part.approval
    kept = dict(previous.model_extra or {}) if previous is not None else {}  # an action's `descriptor`
    part.approval = ToolApproval(id=previous.id if previous is not None else part.tool_call_id, approved=approved,
                                 reason=reason, is_automatic=previous.is_automatic if previous else None,
                                 signature=previous.signature if previous else None, **kept)
    part.state = "approval-responded" if approved else "output-denied"


def mid_batch(message: Message | None) -> bool:
    """True when some calls of the message are answered and others still wait: a continuation
    must wait for the rest of the batch."""
    if message is None or message.role != "assistant":
        return False
    states = [p.state for p in message.parts if isinstance(p, ToolPart)]
    return any(s in _WAITING for s in states) and any(s not in _WAITING for s in states)


def approved_calls(history: Sequence[Message]) -> list[ToolCall]:
    """Calls a person approved since the last user message that have not run yet, in order."""
    calls: list[ToolCall] = []
    for message in reversed(history):
        if message.role == "user":
            break
        found = [ToolCall(id=p.tool_call_id, name=p.name, input=normalize_input(p.input))
                 for p in message.parts
                 if isinstance(p, ToolPart) and p.state == "approval-responded" and p.approval is not None
                 and p.approval.approved]
        calls[:0] = found
    return calls


async def settle_earlier_calls(session: Session, chunks: Iterable[JSONObject]) -> list[Message]:
    """Write tool outputs whose call is in an earlier message into that message (first write wins);
    each changed message is saved and published as `MessageChanged`."""
    changed: dict[str, Message] = {}
    for chunk in chunks:
        call_id = str(chunk.get("toolCallId"))
        history = [changed.get(m.id, m) for m in session.history()]
        found = find_part(history, call_id, _TAKES_RESULT)
        if found is None:
            continue
        message, index = found
        copy = message if message.id in changed else message.copy_deep()
        part = _part(copy, index)
        if apply_tool_output(part, chunk):
            if part.state == "output-available" and not part.preliminary:
                part.preliminary = False  # a final output written into the calling message says so
            changed[copy.id] = copy
    stored: list[Message] = []
    for message in changed.values():
        saved = session.save([message])[0]
        await session.fanout.publish(MessageChanged(saved))
        stored.append(saved)
    return stored


class ToolUpdates:
    """Applies tool results and approvals to an agent's transcript, strictly in arrival order."""

    def __init__(self, agent: Think) -> None:
        self.agent = agent
        self.in_flight = 0
        """Applies queued or running (a continuation waits until there are none)."""
        # anyio.Lock hands the lock to waiters in arrival order; the order of answers relies on it.
        self._lock = anyio.Lock()

    async def add_result(self, tool_call_id: str, *, output: Any = None, error_text: str | None = None,
                         is_error: bool = False, session: str = "") -> Message | None:
        """Settle a waiting call with its output (or an error); the updated message, or None when
        no part of that id waits for a result. An output nested deeper than a part's field may be
        (`think.protocol.limits`) raises `TooDeep`, and nothing changes."""
        if not is_error:
            check_depth(output, "The output", at=IN_PART)

        def change(message: Message, index: int) -> None:
            set_result(message, index, output=output, error_text=error_text, is_error=is_error)

        return await self._apply(tool_call_id, _TAKES_RESULT, change, session=session)

    async def approve(self, tool_call_id: str, approved: bool, *, reason: str | None = None,
                      session: str = "") -> Message | None:
        """Answer a call waiting for approval; the updated message, or None when nothing waits."""

        def change(message: Message, index: int) -> None:
            set_approval(message, index, approved=approved, reason=reason)

        return await self._apply(tool_call_id, _TAKES_APPROVAL, change, session=session)

    async def replace_output(self, tool_call_id: str, output: Any, *, drop_text_after: bool = False) -> Message | None:
        """Replace the output of a settled call (server code: a paused execution's outcome takes
        the place of its `paused` result); None when no settled part has that id. With
        `drop_text_after`, the text and reasoning parts after it in that message go too (what the
        model wrote about the pause is wrong once it is resolved); tool and file parts stay."""
        check_depth(output, "The output", at=IN_PART)

        def change(message: Message, index: int) -> None:
            set_result(message, index, output=output)
            if drop_text_after:
                message.parts[index + 1:] = [p for p in message.parts[index + 1:]
                                             if getattr(p, "type", "") not in ("text", "reasoning")]
                while len(message.parts) > index + 1 and getattr(message.parts[-1], "type", "") == "step-start":
                    message.parts.pop()  # a step left with nothing in it

        return await self._apply(tool_call_id, frozenset({"output-available"}), change)

    async def client_result(self, tool_call_id: str, kinds: Callable[[], ToolKinds], *, output: Any = None,
                            error_text: str | None = None, is_error: bool = False,
                            session: str = "") -> Message | None:
        """A client's result for a call (`cf_agent_tool_result`): applied as `add_result` does if
        `think.turns.trust` allows it; raises `Refused` and changes nothing otherwise. `kinds` is
        asked, under the lock, which tools the client answers for."""

        def judge(part: ToolPart | None) -> None:
            check_result(tool_call_id, part, kinds())

        def change(message: Message, index: int) -> None:
            set_result(message, index, output=output, error_text=error_text, is_error=is_error)

        return await self._apply(tool_call_id, RESULT_STATES, change, judge, session=session)

    async def client_approval(self, tool_call_id: str, approved: bool, *, session: str = "") -> Message | None:
        """A client's approval (`cf_agent_tool_approval`): applied only to a call that asks for
        one; raises `Refused` and changes nothing otherwise."""

        def judge(part: ToolPart | None) -> None:
            check_approval(tool_call_id, part)

        def change(message: Message, index: int) -> None:
            set_approval(message, index, approved=approved)

        return await self._apply(tool_call_id, APPROVAL_STATES, change, judge, session=session)

    async def _apply(self, tool_call_id: str, states: frozenset[str], change: Callable[[Message, int], None],
                     judge: Judge | None = None, *, session: str = "") -> Message | None:
        """`session`: the session whose transcript has the call (default: the root session)."""
        self.in_flight += 1
        try:
            async with self._lock:
                if session:
                    await self._wait_for_session_turn(session)
                else:
                    await self._wait_for_turn_with(tool_call_id)
                target = self.agent.sessions.session(session) if session else self.agent.session
                found = find_part(target.history(), tool_call_id, states)
                if judge is not None:  # the newest part that could take it, else the newest at all
                    seen = found or find_part(target.history(), tool_call_id, ANY_TOOL_STATE)
                    judge(_part(*seen) if seen is not None else None)
                if found is None:
                    return None
                message = found[0].copy_deep()
                change(message, found[1])
                stored = target.save([message])[0]
                await target.fanout.publish(MessageChanged(stored))
                return stored
        finally:
            self.in_flight -= 1
            self.agent.continuations.poke()

    async def _wait_for_session_turn(self, session_id: str) -> None:
        """A session other than the root keeps no index of its running turn's calls: while a turn
        of it runs, its calls may be in no stored message yet, so wait (bounded) for that turn to end."""
        active = self.agent.active_turn
        if active is None or active.session_id != session_id:
            return
        request_id = active.request_id

        def running() -> bool:
            current = self.agent.active_turn
            return current is not None and current.request_id == request_id

        await _wait_for_end(self.agent.sessions.session(session_id).fanout, request_id, running)

    async def _wait_for_turn_with(self, tool_call_id: str) -> None:
        """A call of the turn still streaming is in no stored message yet: wait for its reply."""
        live = self.agent.streams.live
        if live is None or tool_call_id not in live.tool_calls:
            return
        request_id = live.request_id

        def running() -> bool:
            current = self.agent.streams.live
            return current is not None and current.request_id == request_id

        await _wait_for_end(self.agent.fanout, request_id, running)


async def _wait_for_end(fanout: Fanout, request_id: str, running: Callable[[], bool]) -> None:
    """Wait, at most `TURN_END_WAIT` seconds, for the turn `request_id` to finish on `fanout`
    (subscribed before `running()` is asked, so an end in between is not missed)."""
    ended = anyio.Event()

    async def listen(event: TurnEvent) -> None:
        if isinstance(event, TurnFinished) and event.request_id == request_id:
            ended.set()

    unsubscribe = fanout.subscribe(listen)
    try:
        with anyio.move_on_after(TURN_END_WAIT):
            if running():
                await ended.wait()
    finally:
        unsubscribe()
