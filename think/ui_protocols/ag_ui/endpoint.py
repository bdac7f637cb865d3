"""The AG-UI endpoint, imported by `think.ui_protocols.ag_ui` on the first AG-UI request, so that
serving does not load the `ag-ui-protocol` models until a client uses them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
from ag_ui.core import RunAgentInput
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from think.agent import Think
from think.ui_protocols import ProtocolContext
from think.ui_protocols.ag_ui.run import run_events
from think.ui_protocols.turn_feed import TurnFeed

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


__all__ = ["AgUiEndpoint"]
