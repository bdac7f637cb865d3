"""Programmatic turn entries: `chat()` with a streaming callback, cancellation by a signal.

`chat(agent, input, callback)` is how a parent (or any code) drives a turn and watches it stream:

    class Printer:
        def on_start(self, info): print("request", info["requestId"])
        def on_event(self, chunk_json): print(chunk_json)          # one UI chunk, as JSON text
        def on_done(self): print("done")
        def on_error(self, message): print("failed:", message)

    await agent.chat("Summarize the report", Printer())

Any object with some of those methods (sync or async) is a callback; `ChatCallback` builds one
from functions. `on_start` runs before the turn is queued, `on_event` for each chunk of this
turn, then `on_done` once the reply is persisted (also for a cancelled turn, whose partial reply
is kept) or `on_error` with the text clients saw. A callback that raises is logged; the turn
goes on.

A `signal` is any event with `is_set()` and `wait()` (`anyio.Event`, `asyncio.Event`): setting it
cancels the turn, queued or running, like `cancel_chat`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import anyio
import orjson

from think.errors import ProtocolError
from think.messages import JSONObject, Message
from think.stream.fanout import ChunkEvent, TurnEvent
from think.tools.tool import Tool
from think.turns.turn import TurnRequest, TurnResult

if TYPE_CHECKING:
    from think.agent import Think

log = logging.getLogger("think.turns")

MessageLike: TypeAlias = Message | str | JSONObject
"""A `Message`, plain text (a user message), or a UIMessage as JSON."""
TurnInput: TypeAlias = MessageLike | Sequence[MessageLike] | Callable[[list[Message]], Sequence[MessageLike]]
"""What `chat()` and `run_turn()` take: one message, a list, or a function of the transcript."""


class Signal(Protocol):
    """An abort signal: `anyio.Event`, `asyncio.Event` or anything with these two methods."""

    def is_set(self) -> bool: ...

    def wait(self) -> Awaitable[Any]: ...


@dataclass
class ChatCallback:
    """`chat()` callbacks from plain functions (sync or async); every one is optional."""

    on_start: Callable[[JSONObject], Any] | None = None
    on_event: Callable[[str], Any] | None = None
    on_done: Callable[[], Any] | None = None
    on_error: Callable[[str], Any] | None = None


def to_message(value: MessageLike) -> Message:
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return Message.user(value)
    if isinstance(value, dict):
        return Message.from_json(value)
    raise ProtocolError(f"expected a Message, a str or a UIMessage dict, got {type(value).__name__}")


def turn_messages(value: TurnInput, *, metadata: JSONObject | None = None) -> list[Message] | Callable[
        [list[Message]], list[Message]]:
    """Normalize a turn's input; `metadata` is merged into the metadata of its user messages."""

    def stamp(messages: Sequence[MessageLike]) -> list[Message]:
        out = [to_message(m) for m in messages]
        if metadata:
            out = [m.model_copy(update={"metadata": {**(m.metadata if isinstance(m.metadata, dict) else {}),
                                                     **metadata}}) if m.role == "user" else m for m in out]
        return out

    if callable(value):
        fn = value
        return lambda history: stamp(fn(history))
    if isinstance(value, str | Message | dict):
        return stamp([value])
    if not isinstance(value, Sequence):
        raise ProtocolError("a turn's input is a message, a list of messages or a function; "
                            f"got {type(value).__name__}")
    return stamp(value)


def is_empty(value: TurnInput) -> bool:
    """An empty string or list: nothing to answer (`run_turn` skips it)."""
    return not callable(value) and (value == "" or (isinstance(value, Sequence) and not isinstance(value, str)
                                                    and len(value) == 0))


async def notify(callback: object, name: str, *args: Any) -> None:
    """Call `callback.<name>(*args)` if it has it; a callback that raises is logged, not raised."""
    fn = getattr(callback, name, None)
    if fn is None:
        return
    try:
        result = fn(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("chat callback %s raised; the turn goes on", name)


async def run_with_signal(agent: Think, turn: TurnRequest, signal: Signal | None) -> TurnResult:
    """`agent.run(turn)`, cancelled when `signal` is set (before it starts, or while it runs)."""
    if signal is None:
        return await agent.run(turn)
    if signal.is_set():
        return TurnResult(request_id=turn.request_id, status="aborted", continuation=turn.continuation)
    given = turn.messages

    def unless_cancelled(history: list[Message]) -> Sequence[Message] | None:
        if signal.is_set():  # cancelled while it waited: it never starts
            return None
        return given(history) if callable(given) else given

    turn = replace(turn, messages=unless_cancelled)
    async with anyio.create_task_group() as tasks:

        async def watch() -> None:
            await signal.wait()
            if not agent.cancel_chat(turn.request_id):
                agent.cancellations.cancel_pending(turn.request_id)

        tasks.start_soon(watch)
        try:
            result = await agent.run(turn)
        finally:
            tasks.cancel_scope.cancel()
    if result.status == "skipped" and signal.is_set():
        result = replace(result, status="aborted")
    return result


async def chat(agent: Think, input: TurnInput, callback: object | None, *, request_id: str,
               signal: Signal | None = None, client_tools: Sequence[Tool] = (), body: JSONObject | None = None,
               metadata: JSONObject | None = None, session: str = "") -> TurnResult:
    """Run one turn and stream it to `callback`. See the module docstring."""
    messages = turn_messages(input, metadata=metadata)
    target = agent.sessions.session(session)
    await notify(callback, "on_start", {"requestId": request_id})

    async def forward(event: TurnEvent) -> None:
        if isinstance(event, ChunkEvent) and event.request_id == request_id:
            await notify(callback, "on_event", orjson.dumps(event.chunk).decode())

    unsubscribe = target.fanout.subscribe(forward) if callback is not None else None
    try:
        result = await run_with_signal(agent, TurnRequest(request_id=request_id, messages=messages, body=body,
                                                          client_tools=tuple(client_tools), session_id=session),
                                       signal)
    finally:
        if unsubscribe is not None:
            unsubscribe()
    if result.status == "error":
        await notify(callback, "on_error", result.error or "The turn failed")
    else:
        await notify(callback, "on_done")
    return result
