"""The OpenTelemetry SDK with in-memory exporters, installed as the global providers once per test
process (the API lets a process set them only once); each test starts from empty exporters."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from think.observe import set_capture_content


@dataclass
class Telemetry:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def points(self, name: str) -> list[object]:
        data = self.metrics.get_metrics_data()
        return [point for rm in (data.resource_metrics if data else []) for sm in rm.scope_metrics
                for metric in sm.metrics if metric.name == name for point in metric.data.data_points]


_installed: Telemetry | None = None


def _install() -> Telemetry:
    global _installed
    if _installed is None:
        exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _installed = Telemetry(exporter, reader)
    return _installed


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    installed = _install()
    installed.spans.clear()
    installed.metrics.get_metrics_data()  # start from what the earlier tests left
    yield installed
    set_capture_content(None)
