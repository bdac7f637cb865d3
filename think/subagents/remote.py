"""A child's turn (`stub.chat(input, callback, signal=…)`) when the child is open in another
process of a cluster: the turn runs there (peer op `sub_agent.chat`), its callbacks' calls come
back as events and are made here, and the `TurnResult` comes back as JSON. Setting `signal` here
stops the turn there (`sub_agent.stop`), which keeps its partial reply as a local stop would.

`abort_sub_agent` and `delete_sub_agent` of such a child run there too: `sub_agent.abort`
cancels its turns and submissions, `sub_agent.close` hibernates it once idle (after the call's
own lease ends), so the parent deletes it only once no process has it open."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from typing import Any

import anyio

from think.messages import Message
from think.runtime.agent import Agent
from think.runtime.base import AgentRuntime
from think.runtime.remote import Emit, on_agent, peer_op
from think.turns.callbacks import ChatCallback
from think.turns.turn import TurnResult
from think.usage.meter import TurnUsage

_STOPS: dict[str, anyio.Event] = {}
"""The stop signals of child turns running here for a parent in another process, by token."""
_KINDS = ("start", "event", "done", "error")
_CLOSING: dict[tuple[type[Agent], str], asyncio.Task[None]] = {}
"""Children being closed here for a parent in another process (one task each)."""
CLOSE_WITHIN = 10.0
"""Seconds `sub_agent.close` keeps trying to hibernate a child that is still busy."""


def _wire_input(value: Any) -> Any:
    if isinstance(value, Message):
        return value.to_json()
    if isinstance(value, list | tuple):
        return [_wire_input(item) for item in value]
    if callable(value):
        raise TypeError("a sub-agent in another process takes messages as input, not a function")
    return value


def result_json(result: TurnResult) -> dict[str, Any]:
    return {"request_id": result.request_id, "status": result.status, "error": result.error,
            "message": result.message.to_json() if result.message is not None else None,
            "continuation": result.continuation, "user_message_ids": list(result.user_message_ids),
            "attachments": list(result.attachments), "output": result.output, "recovering": result.recovering,
            "steered": result.steered, "usage": result.usage.to_json() if result.usage is not None else None}


def result_from_json(data: dict[str, Any]) -> TurnResult:
    return TurnResult(request_id=data["request_id"], status=data["status"], error=data.get("error"),
                      message=Message.from_json(data["message"]) if data.get("message") else None,
                      continuation=bool(data.get("continuation")),
                      user_message_ids=tuple(data.get("user_message_ids") or ()),
                      attachments=tuple(data.get("attachments") or ()), output=data.get("output"),
                      recovering=bool(data.get("recovering")), steered=bool(data.get("steered")),
                      usage=TurnUsage.from_json(data["usage"]) if data.get("usage") else None)


async def chat_on_child(runtime: AgentRuntime, cls: type[Agent], address: str, input: Any,
                        callback: object | None = None, *, signal: anyio.Event | None = None,
                        **options: Any) -> TurnResult:
    """`child.chat(input, callback, signal=signal, **options)`, wherever the child is open."""

    async def here(child: Any) -> TurnResult:
        result: TurnResult = await child.chat(input, callback, signal=signal, **options)
        return result

    async def deliver(event: dict[str, Any]) -> None:
        handler = getattr(callback, f"on_{event['kind']}", None) if event.get("kind") in _KINDS else None
        if handler is None:
            return
        done = handler() if event["kind"] == "done" else handler(event.get("value"))
        if inspect.isawaitable(done):
            await done

    token = uuid.uuid4().hex
    payload = {"input": _wire_input(input), "token": token, "options": options}

    async def stop_there(signal: anyio.Event) -> None:
        await signal.wait()
        await on_agent(runtime, cls, address, "sub_agent.stop", {"token": token}, here=lambda _: _stop(token))

    if signal is None:
        answer = await on_agent(runtime, cls, address, "sub_agent.chat", payload, here=here, on_event=deliver)
    else:
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(stop_there, signal)
                answer = await on_agent(runtime, cls, address, "sub_agent.chat", payload, here=here,
                                        on_event=deliver)
                tasks.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # the call's own failure, not a group of one
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
    return answer if isinstance(answer, TurnResult) else result_from_json(answer)


async def _stop(token: str) -> bool:
    stop = _STOPS.get(token)
    if stop is not None:
        stop.set()
    return stop is not None


@peer_op("sub_agent.chat")
async def _chat_here(agent: Agent, payload: dict[str, Any], emit: Emit) -> Any:
    from think.subagents.tools import run_child

    async def send(kind: str, value: Any = None) -> None:
        await emit({"kind": kind, "value": value})

    callback = ChatCallback(on_start=lambda v: send("start", v), on_event=lambda v: send("event", v),
                            on_done=lambda: send("done"), on_error=lambda v: send("error", v))
    token = str(payload["token"])
    stop = _STOPS[token] = anyio.Event()
    try:
        chat = getattr(agent, "chat")  # noqa: B009 - a Think (a child that is not one fails here)
        result = await run_child(lambda signal: chat(payload["input"], callback, signal=signal,
                                                     **(payload.get("options") or {})), stop)
    finally:
        _STOPS.pop(token, None)
    return result_json(result)


@peer_op("sub_agent.stop")
async def _stop_here(agent: Agent, payload: dict[str, Any], emit: Emit) -> bool:
    return await _stop(str(payload["token"]))


async def abort_here(child: Agent, reason: str) -> int:
    """Cancel the turns and submissions of a child open in this process; how many turns."""
    cancelled = 0
    if hasattr(child, "cancel_all_chats"):
        cancelled = int(child.cancel_all_chats())
    submissions = getattr(child, "submissions", None)
    if submissions is not None:
        for sub in submissions.list(["pending", "running"]):
            await submissions.cancel(sub.submission_id, reason)
    return cancelled


@peer_op("sub_agent.abort")
async def _abort_here(agent: Agent, payload: dict[str, Any], emit: Emit) -> int:
    return await abort_here(agent, str(payload.get("reason") or "The parent aborted the sub-agent"))


@peer_op("sub_agent.close")
async def _close_here(agent: Agent, payload: dict[str, Any], emit: Emit) -> bool:
    """Hibernate the child as soon as it is idle (this call's lease ends first); True once asked."""
    runtime, key = agent.runtime, (type(agent), agent.name)
    if runtime is None or key in _CLOSING:
        return True

    async def close() -> None:
        try:
            with anyio.move_on_after(CLOSE_WITHIN):
                while agent in getattr(runtime, "live", list)() and not await runtime.hibernate(*key):  # noqa: ASYNC110
                    await anyio.sleep(0.02)
        finally:
            _CLOSING.pop(key, None)

    _CLOSING[key] = asyncio.get_running_loop().create_task(close())
    return True
