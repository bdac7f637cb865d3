"""Installing an exporter: only when asked (`think serve --otel`, or the standard OTLP env vars).

Without it think records nothing and sends nothing. An app that installs its own OpenTelemetry
providers needs none of this: think uses whatever global providers are installed.
"""

from __future__ import annotations

import os

from think.errors import ConfigurationError

OTLP_ENV = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")


def otlp_requested(flag: bool) -> bool:
    """`--otel`, or an OTLP endpoint in the environment (and `OTEL_SDK_DISABLED` not true)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return flag or any(os.environ.get(name) for name in OTLP_ENV)


def otlp_endpoint() -> str:
    """Where traces go, as the exporter will read it from the environment."""
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318")
    return base.rstrip("/") + "/v1/traces"


def install_otlp(service_name: str = "think") -> None:
    """Global tracer and meter providers exporting OTLP over HTTP, configured by the standard
    `OTEL_*` variables (endpoint, headers, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`;
    default endpoint http://localhost:4318)."""
    try:
        from opentelemetry import metrics, trace
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import OTELResourceDetector, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigurationError(f"OpenTelemetry export needs the SDK: pip install 'think-agents[otel]' ({exc.name} "
                                 "is missing)") from exc
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service_name)}).merge(
        OTELResourceDetector().detect())
    tracing = TracerProvider(resource=resource)
    tracing.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracing)
    metrics.set_meter_provider(MeterProvider(resource=resource,
                                             metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]))


def shutdown() -> None:
    """Flush and stop the installed SDK providers (spans still batched are sent)."""
    from opentelemetry import metrics, trace

    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        stop = getattr(provider, "shutdown", None)
        if callable(stop):
            stop()
