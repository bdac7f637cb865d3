"""AG-UI: `POST /agents/<agent>/<name>/ag-ui` with a `RunAgentInput` → the run as SSE events.

    create_app([Assistant], protocols=["cf_agent", "ag-ui"])

    import { HttpAgent } from "@ag-ui/client";
    const agent = new HttpAgent({ url: "http://localhost:8000/agents/assistant/alice/ag-ui" });
    await agent.runAgent();

The body is validated with the `ag-ui-protocol` package's `RunAgentInput` (a 422 with the
errors when it is not one); the path and the request go through the app's `on_before_connect`
first, as a WebSocket upgrade does. What the run does, and what a client may claim in it, is in
`think.ui_protocols.ag_ui.run`; the mapping of turn chunks to events in `…ag_ui.events`, of
the transcript to AG-UI messages in `…ag_ui.messages`. Nothing here trusts the client: its
messages, tool results and approvals are judged by `think.turns.trust`, the turn runs on the
agent's one durable turn path (`think.ui_protocols.turn_feed`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute, Route

from think.ui_protocols import ProtocolContext, UIProtocol
from think.ui_protocols.deferred import DeferredEndpoints

if TYPE_CHECKING:
    from think.ui_protocols.ag_ui.endpoint import AgUiEndpoint

PATH = "/{agent}/{name}/ag-ui"


def routes(context: ProtocolContext) -> list[BaseRoute]:
    """`POST …/ag-ui`; `endpoint.AgUiEndpoint` (and the AG-UI models) load on the first request."""
    endpoint = DeferredEndpoints("think.ui_protocols.ag_ui.endpoint", "AgUiEndpoint", context)
    return [Route(context.base + PATH, context.http(endpoint.endpoint("post")), methods=["POST", "OPTIONS"])]


protocol = UIProtocol(name="ag-ui", routes=routes)


def __getattr__(name: str) -> Any:
    if name == "AgUiEndpoint":
        from think.ui_protocols.ag_ui.endpoint import AgUiEndpoint

        return AgUiEndpoint
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["AgUiEndpoint", "protocol", "routes"]
