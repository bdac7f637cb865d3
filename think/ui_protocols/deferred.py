"""Endpoints built on first use: a protocol's routes exist from the start, while the module that
answers them (and the SDK it imports) loads on the first request that reaches one.

    endpoints = DeferredEndpoints("think.ui_protocols.a2a.endpoints", "A2AEndpoints", context)
    Route(path, endpoints.endpoint("rpc"))

Building is synchronous and happens at most once (one event loop: no request sees a half-built
object); an import error there is that request's 500, as any endpoint's exception is.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response


class DeferredEndpoints:
    """`module.name(*args)`, imported and built the first time one of its endpoints is called."""

    def __init__(self, module: str, name: str, *args: Any) -> None:
        self.module, self.name, self.args = module, name, args
        self._built: Any = None

    def built(self) -> Any:
        if self._built is None:
            self._built = getattr(importlib.import_module(self.module), self.name)(*self.args)
        return self._built

    def endpoint(self, method: str) -> Callable[[Request], Awaitable[Response]]:
        """An endpoint that calls the built object's `method` with the request."""

        async def call(request: Request) -> Response:
            answer: Response = await getattr(self.built(), method)(request)
            return answer

        call.__name__ = method
        return call
