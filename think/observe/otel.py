"""The one place think touches the OpenTelemetry API: loaded on first use, cached per provider.

`tracer()` and `meter()` return None while no SDK provider is installed (the API's proxy or no-op
providers): every span and metric helper then does nothing, not even build attributes.
"""

from __future__ import annotations

import os
from typing import Any

from think._version import __version__

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI instrumentations' opt-in for recording prompts, answers and tool arguments/results."""

_trace: Any = None
_metrics: Any = None
_tracer: tuple[Any, Any] | None = None  # (provider, tracer)
_meter: tuple[Any, Any] | None = None  # (provider, meter)
_capture: bool | None = None
_capture_env: bool | None = None  # the env opt-in, read once (again after `set_capture_content(None)`)


def _load() -> None:
    global _trace, _metrics
    import opentelemetry.metrics as metrics
    import opentelemetry.trace as trace

    _trace, _metrics = trace, metrics


def tracer() -> Any:
    """The think tracer of the installed provider, or None when tracing is off."""
    global _tracer
    if _trace is None:
        _load()
    provider = _trace.get_tracer_provider()
    if _tracer is not None and _tracer[0] is provider:
        return _tracer[1]
    if isinstance(provider, _trace.ProxyTracerProvider | _trace.NoOpTracerProvider):
        return None
    _tracer = (provider, provider.get_tracer("think", __version__))
    return _tracer[1]


def meter() -> Any:
    """The think meter of the installed provider, or None when metrics are off."""
    global _meter
    if _metrics is None:
        _load()
    provider = _metrics.get_meter_provider()
    if _meter is not None and _meter[0] is provider:
        return _meter[1]
    if type(provider).__name__ in ("_ProxyMeterProvider", "NoOpMeterProvider"):
        return None
    _meter = (provider, provider.get_meter("think", __version__))
    return _meter[1]


_context: Any = None


def context_api() -> Any:
    global _context
    if _context is None:
        import opentelemetry.context as context

        _context = context
    return _context


def trace_api() -> Any:
    if _trace is None:
        _load()
    return _trace


def capture_content() -> bool:
    """Whether message content goes into spans: `set_capture_content()`, else the env opt-in."""
    global _capture_env
    if _capture is not None:
        return _capture
    if _capture_env is None:
        _capture_env = os.environ.get(CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")
    return _capture_env


def set_capture_content(enabled: bool | None) -> None:
    """Record prompts, answers and tool arguments/results in spans (None: follow the env var)."""
    global _capture, _capture_env
    _capture, _capture_env = enabled, None
