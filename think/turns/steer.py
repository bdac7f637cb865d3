"""Steering a running turn: a user message sent while a turn runs joins that turn instead of
waiting for it (`when_busy="steer"`, `message_concurrency="steer"`). Not in the original, whose
harness raises `SteerNotSupportedError`.

The turn that holds the agent's queue slot is the *host*; a steered turn of the same session is
put in the host's inbox instead of the queue. At the host's next step boundary (its model call's
tool calls have finished, the next model call has not started) the host's loop stops: its reply
so far is persisted and finished as usual, and the steered turns then run in the same slot, before
anything else in the queue: their user messages are saved after that reply (so the transcript
keeps the order things happened in), clients get them as ordinary user messages, and the model's
next call sees them. A host that ends before a boundary (a plain text answer) runs the inbox
right after it, as the next turn. Several turns steered before one boundary are answered
together: their messages are saved in arrival order and the newest one's turn answers them all
(the others end with that turn's result, under its request id).

What this module trusts: nothing from clients; a steered turn is a `TurnRequest` like any other
(see `think.turns.trust` for what a client may claim). Durability is the caller's:
`submit_messages(when_busy="steer")` stores the message in the submission ledger before it
returns, so a kill before the boundary leaves it pending and the restarted agent answers it as an
ordinary turn; a WebSocket steer, like a queued WebSocket message, is saved when its turn starts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

import anyio

from think.messages import Message
from think.turns.turn import TurnRequest, TurnResult


@dataclass
class _Steered:
    turn: TurnRequest
    generation: int
    done: anyio.Event = field(default_factory=anyio.Event)
    result: TurnResult | None = None
    """None once `done` is set: not taken (the host stopped early); the turn queues itself."""


@dataclass
class _Host:
    request_id: str
    session_id: str
    inbox: list[_Steered] = field(default_factory=list)


class Steering:
    """The host turn of one agent and the turns steered into it."""

    def __init__(self, cancelled: Callable[[str], bool] = lambda request_id: False) -> None:
        self._host: _Host | None = None
        self._cancelled = cancelled

    def pending(self) -> bool:
        """True when a steered turn (not cancelled meanwhile) waits for the host's next step boundary."""
        host = self._host
        return host is not None and any(not self._cancelled(s.turn.request_id) for s in host.inbox)

    def host_request_id(self, session_id: str) -> str | None:
        """The running turn a steer of this session would join, if any."""
        host = self._host
        return host.request_id if host is not None and host.session_id == session_id else None

    def offer(self, turn: TurnRequest, generation: int) -> _Steered | None:
        """Put `turn` in the running turn's inbox; None when no turn of its session runs."""
        host = self._host
        if host is None or host.session_id != turn.session_id:
            return None
        steered = _Steered(turn, generation)
        host.inbox.append(steered)
        return steered

    async def wait(self, steered: _Steered) -> TurnResult | None:
        """The steered turn's result; None if the host let it go (it must queue itself)."""
        try:
            await steered.done.wait()
        finally:
            host = self._host
            if not steered.done.is_set() and host is not None and steered in host.inbox:
                host.inbox.remove(steered)  # the waiter was cancelled before its turn was taken
        return steered.result

    async def host(self, turn: TurnRequest, run: Callable[[TurnRequest], Awaitable[TurnResult]],
                   generation: Callable[[], int], new_request_id: Callable[[], str]) -> TurnResult:
        """Run `turn` as the host, then every turn steered into it (see the module docstring)."""
        if self._host is not None:  # a nested slot holder cannot happen (one slot per agent); be safe
            return await run(turn)
        host = self._host = _Host(turn.request_id, turn.session_id)
        try:
            result = last = await run(turn)
            while host.inbox or (last.steered and host.session_id == turn.session_id):
                if not host.inbox:  # every turn that stopped it was withdrawn: finish the answer
                    last = await run(TurnRequest(request_id=new_request_id(), continuation=True,
                                                 session_id=host.session_id, trigger=turn.trigger))
                    continue  # no await between the last check and closing: a late offer queues
                batch, host.inbox = host.inbox, []
                current = [s for s in batch if s.generation == generation()]
                for stale in (s for s in batch if s not in current):
                    stale.result = TurnResult(request_id=stale.turn.request_id, status="skipped")
                    stale.done.set()
                if not current:
                    continue
                host.request_id = current[-1].turn.request_id
                stopped = last.steered
                last = answered = await run(_together(current))
                if answered.status == "skipped" and stopped:
                    last = replace(answered, steered=True)  # withdrawn: the stopped answer is continued
                for steered in current:
                    steered.result = answered
                    steered.done.set()
            return result
        finally:
            self._host = None
            for left in host.inbox:  # the host was cancelled: these queue themselves
                left.done.set()


def _together(batch: list[_Steered]) -> TurnRequest:
    """One turn for the turns steered before one boundary: the newest, saving everyone's messages."""
    newest = batch[-1].turn
    if len(batch) == 1:
        return newest

    def messages(history: list[Message]) -> list[Message] | None:
        out: list[Message] = []
        withdrawn = 0
        for steered in batch:
            new = steered.turn.messages(history) if callable(steered.turn.messages) else steered.turn.messages
            withdrawn += new is None
            out.extend(new or ())
        return None if withdrawn == len(batch) else out

    return replace(newest, messages=messages)
