"""A child's turn (`stub.chat(input, callback, signal=…)`) when the child is open in another
process of a cluster: the turn runs there (peer op `sub_agent.chat`), its callbacks' calls come
back as events and are made here, and the `TurnResult` comes back as JSON. Setting `signal` here
stops the turn there (`sub_agent.stop`), which keeps its partial reply as a local stop would."""

from __future__ import annotations

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
