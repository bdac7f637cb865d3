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

from collections.abc import AsyncIterator

import orjson
from ag_ui.core import RunAgentInput
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from think.agent import Think
from think.ui_protocols import ProtocolContext, UIProtocol
from think.ui_protocols.ag_ui.run import run_events
from think.ui_protocols.turn_feed import TurnFeed

PATH = "/{agent}/{name}/ag-ui"
MAX_BODY_BYTES = 16 * 1024 * 1024
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class AgUiEndpoint:
    """`POST …/ag-ui` for the app's agent classes."""

    def __init__(self, context: ProtocolContext) -> None:
        self.context = context

    async def post(self, request: Request) -> Response:
        target = await self.context.admit(request)
        if isinstance(target, Response):
            return target
        cls, name = target
        if not issubclass(cls, Think):
            return PlainTextResponse(f"{cls.__name__} is not a chat agent", status_code=400)
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return PlainTextResponse(f"Body too large (limit {MAX_BODY_BYTES} bytes)", status_code=413)
        try:
            run = RunAgentInput.model_validate_json(body)
        except ValidationError as exc:
            return JSONResponse({"error": "not a RunAgentInput", "detail": orjson.loads(exc.json())},
                                status_code=422)
        encoder = EventEncoder(accept=request.headers.get("accept") or "")
        return StreamingResponse(self._stream(cls, name, run, encoder), media_type="text/event-stream",
                                 headers=SSE_HEADERS)

    async def _stream(self, cls: type[Think], name: str, run: RunAgentInput,
                      encoder: EventEncoder) -> AsyncIterator[str]:
        async with self.context.registry.use(cls, name) as host:
            with TurnFeed(host) as feed:
                async for event in run_events(feed, run):
                    yield encoder.encode(event)


def routes(context: ProtocolContext) -> list[BaseRoute]:
    endpoint = AgUiEndpoint(context)
    return [Route(context.base + PATH, context.http(endpoint.post), methods=["POST", "OPTIONS"])]


protocol = UIProtocol(name="ag-ui", routes=routes)

__all__ = ["AgUiEndpoint", "protocol", "routes"]
