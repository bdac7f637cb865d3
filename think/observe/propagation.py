"""Trace context across processes: W3C `traceparent`/`tracestate` headers, in and out.

`inject_headers(headers)` adds the current span's context to the headers of a request this process
makes (a forwarded call to another process); `extract_context(headers)` reads an incoming
request's. `TraceContextMiddleware` (on every served app) makes an HTTP request's incoming context
current while it is handled, so the work it starts joins the caller's trace: a turn it asks for
(`parent_for_turn`, captured into the `TurnRequest`, since turns run in tasks of their own) and a
submission it makes (`parent_for_work`). Websocket connections are not read: one handshake's
context would otherwise parent every turn of a long-lived connection.

Trusts nothing it reads: a malformed header is no context (the work starts a trace of its own),
and a caller's context only names a parent; sampling follows the installed sampler. With tracing
off every helper returns at once and the headers are not parsed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from think.observe.otel import context_api, trace_api, tracer

_HEADERS = (b"traceparent", b"tracestate", b"baggage")


def inject_headers(headers: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Add the current trace context to `headers` (as the installed propagator writes it: W3C
    `traceparent`, `tracestate`, `baggage` by default) and return them; unchanged with tracing
    off or no current span."""
    if tracer() is None:
        return headers
    from opentelemetry import propagate

    propagate.inject(headers)
    return headers


def extract_context(headers: Mapping[str, str] | Iterable[tuple[bytes, bytes]]) -> Any:
    """The OpenTelemetry context an incoming request's headers carry (a mapping, or an ASGI
    scope's raw header pairs), or None: tracing off, no or a malformed `traceparent`."""
    if tracer() is None:
        return None
    if isinstance(headers, Mapping):
        carrier = {str(k).lower(): str(v) for k, v in headers.items()}
    else:
        carrier = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers if k.lower() in _HEADERS}
    if "traceparent" not in carrier:
        return None
    from opentelemetry import propagate

    try:
        context = propagate.extract(carrier)
    except (ValueError, TypeError):
        return None
    if not trace_api().get_current_span(context).get_span_context().is_valid:
        return None
    return context


def parent_for_turn() -> Any:
    """The current context if its span came from another process (an extracted `traceparent`),
    else None: what a `TurnRequest` carries to the task its turn runs in. Local parents are left
    to the context the turn runs in, as before."""
    if tracer() is None:
        return None
    context = context_api().get_current()
    span_context = trace_api().get_current_span(context).get_span_context()
    return context if span_context.is_valid and span_context.is_remote else None


def parent_for_work() -> Any:
    """The current context if it has a span (remote or local), else None: the parent of work
    that runs later in another task (a submission)."""
    if tracer() is None:
        return None
    context = context_api().get_current()
    return context if trace_api().get_current_span(context).get_span_context().is_valid else None


def without_current_span() -> bool:
    """True when no valid span is current (a captured parent then applies)."""
    return not trace_api().get_current_span().get_span_context().is_valid


class TraceContextMiddleware:
    """ASGI middleware: an HTTP request carrying `traceparent` is handled inside that context."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or tracer() is None:
            await self.app(scope, receive, send)
            return
        context = extract_context(scope.get("headers") or ())
        if context is None:
            await self.app(scope, receive, send)
            return
        token = context_api().attach(context)
        try:
            await self.app(scope, receive, send)
        finally:
            context_api().detach(token)


__all__ = ["TraceContextMiddleware", "extract_context", "inject_headers", "parent_for_turn", "parent_for_work"]
