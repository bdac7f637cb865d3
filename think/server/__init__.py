"""Serving agents over WebSocket and HTTP: the only part of think that knows ASGI."""

from think.server.app import create_app
from think.server.rpc import StreamingResponse

__all__ = ["StreamingResponse", "create_app"]
