"""A2A: every chat agent class as an A2A agent (protocol 1.x, JSON-RPC binding, `a2a-sdk`).

    GET  /.well-known/agent-card.json                   the card of the first chat agent class
    GET  /agents/<agent>/.well-known/agent-card.json    the card of <agent>
    POST /agents/<agent>/a2a                            JSON-RPC: SendMessage, SendStreamingMessage,
                                                        GetTask, ListTasks, CancelTask, SubscribeToTask

A conversation (`contextId`) is an agent instance: `/agents/<agent>/<contextId>` over the other
protocols shows the same transcript. A task is a durable submission (`think.ui_protocols.a2a.tasks`).
The SDK's JSON-RPC dispatcher parses and answers requests; `handler.TaskHandler` does the work.

Before a request reaches the dispatcher, the endpoint reads which instance it is for (the
message's `contextId`, the instance of its `taskId`, or a new one) and asks the app's
`on_before_connect` about it, as a WebSocket upgrade is asked (a card is asked with the name
`""`). Nothing a client sends is trusted: its message becomes a user message cleaned by
`think.turns.trust.from_web`; its answers to a waiting task go through the agent's chat channel
and `think.turns.trust` like a WebSocket tab's.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute, Route

from think.ui_protocols import ProtocolContext, UIProtocol
from think.ui_protocols.deferred import DeferredEndpoints

if TYPE_CHECKING:
    from think.ui_protocols.a2a.endpoints import A2AEndpoints, instance_of

if importlib.util.find_spec("a2a.server") is None:  # the optional extra: mountable only when installed
    raise ImportError("No module named 'a2a.server' (install think-agents[a2a])")

CARD_PATH = "/.well-known/agent-card.json"


def routes(context: ProtocolContext) -> list[BaseRoute]:
    """The card and JSON-RPC routes; `endpoints.A2AEndpoints` (and the SDK) load on the first request."""
    endpoints = DeferredEndpoints("think.ui_protocols.a2a.endpoints", "A2AEndpoints", context)
    base = context.base + "/{agent}"
    card = context.http(endpoints.endpoint("card"))
    return [
        Route(CARD_PATH, card, methods=["GET", "OPTIONS"]),
        Route(base + CARD_PATH, card, methods=["GET", "OPTIONS"]),
        Route(base + "/a2a", context.http(endpoints.endpoint("rpc")), methods=["POST", "OPTIONS"]),
    ]


protocol = UIProtocol(name="a2a", routes=routes)


def __getattr__(name: str) -> Any:
    if name in ("A2AEndpoints", "instance_of"):
        from think.ui_protocols.a2a import endpoints

        return getattr(endpoints, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["A2AEndpoints", "instance_of", "protocol", "routes"]
