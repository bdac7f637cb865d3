"""The A2A endpoints (the card and JSON-RPC), imported by `think.ui_protocols.a2a` on the first
A2A request, so that serving does not load the `a2a-sdk` until a client uses it."""

from __future__ import annotations

import uuid
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from think.agent import Think
from think.errors import ConfigurationError
from think.runtime.naming import check_agent_name
from think.ui_protocols import ProtocolContext
from think.ui_protocols.a2a.card import Cards
from think.ui_protocols.a2a.handler import INSTANCE, TaskHandler
from think.ui_protocols.a2a.tasks import context_of

_OPENS = ("SendMessage", "SendStreamingMessage")
_BY_TASK = ("GetTask", "CancelTask", "SubscribeToTask")


def instance_of(body: Any) -> str | None:
    """The instance a JSON-RPC request is for: the message's `contextId` (or its `taskId`'s), a
    task method's task id's, `ListTasks`'s `contextId`; a new one for a message without either;
    None when the request names none (the dispatcher answers it without an agent)."""
    if not isinstance(body, dict) or not isinstance(params := body.get("params"), dict):
        return None
    method = body.get("method")
    if method in _OPENS:
        message = params.get("message")
        if not isinstance(message, dict):
            return None
        if isinstance(context := message.get("contextId"), str) and context:
            return context
        if isinstance(task := message.get("taskId"), str) and task:
            return context_of(task)
        return str(uuid.uuid4())
    if method in _BY_TASK and isinstance(task := params.get("id"), str):
        return context_of(task)
    if method == "ListTasks" and isinstance(context := params.get("contextId"), str) and context:
        return context
    return None


class _CallContext(DefaultServerCallContextBuilder):
    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[INSTANCE] = getattr(request.state, "think_instance", None)
        return context


class A2AEndpoints:
    """The card and JSON-RPC routes for the app's chat agent classes."""

    def __init__(self, context: ProtocolContext) -> None:
        self.context = context
        self.classes = {kebab: cls for kebab, cls in context.classes.items() if issubclass(cls, Think)}
        self.cards = Cards(context.registry.runtime)
        builder = _CallContext()
        self.dispatchers = {kebab: JsonRpcDispatcher(TaskHandler(cls, context.registry), context_builder=builder)
                            for kebab, cls in self.classes.items()}

    def _class(self, request: Request) -> type[Think] | None:
        kebab = request.path_params.get("agent")
        if kebab is None:
            return next(iter(self.classes.values()), None)
        return self.classes.get(kebab)

    async def card(self, request: Request) -> Response:
        cls = self._class(request)
        if cls is None:
            return PlainTextResponse("No such chat agent", status_code=404)
        if (denial := await self.context.authorize(request, cls, "")) is not None:
            return denial
        url = str(request.base_url).rstrip("/") + f"{self.context.base}/{cls.kebab_name()}/a2a"
        return JSONResponse(agent_card_to_dict(await self.cards.card(cls, url)))

    async def rpc(self, request: Request) -> Response:
        cls = self._class(request)
        if cls is None:
            return PlainTextResponse("No such chat agent", status_code=404)
        try:
            body = await request.json()
        except ValueError:
            body = None  # the dispatcher answers with its parse error
        name = instance_of(body)
        if name is not None:
            try:
                check_agent_name(name)
            except ConfigurationError as exc:
                return JSONResponse({"jsonrpc": "2.0", "id": body.get("id") if isinstance(body, dict) else None,
                                     "error": {"code": -32602, "message": f"contextId: {exc}"}})
            if (denial := await self.context.authorize(request, cls, name)) is not None:
                return denial
        request.state.think_instance = name
        return await self.dispatchers[cls.kebab_name()].handle_requests(request)


__all__ = ["A2AEndpoints", "instance_of"]
