"""A local OTLP/HTTP collector for tests: records what an exporter sends to 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class Collector:
    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.spans: list[Any] = []
        self.metric_names: set[str] = set()
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def span_names(self) -> list[str]:
        with self.lock:
            return [s.name for s in self.spans]


@contextmanager
def collector() -> Iterator[Collector]:
    box: list[Collector] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            got = box[0]
            if self.path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                with got.lock:
                    got.spans += [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
                reply = ExportTraceServiceResponse().SerializeToString()
            elif self.path == "/v1/metrics":
                metrics = ExportMetricsServiceRequest.FromString(body)
                with got.lock:
                    got.metric_names |= {m.name for rm in metrics.resource_metrics for sm in rm.scope_metrics
                                         for m in sm.metrics}
                reply = ExportMetricsServiceResponse().SerializeToString()
            else:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    box.append(Collector(server))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
