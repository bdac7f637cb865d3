"""Trace context across processes: a real `think serve --otel` subprocess joins the trace of the
request that asked for a turn (an HTTP `traceparent`, or MCP's `_meta` from the SDK's client), and
`inject_headers` / `extract_context` round-trip a context."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client
from opentelemetry import trace

from tests.cli.logged_server import LoggedServer, logged_serve
from tests.cli.test_serve_logs import READY, model_env
from tests.models.fake_llm_server import FakeLLMServer, serve_in_thread
from tests.observe.collector import Collector, collector
from tests.observe.conftest import Telemetry
from tests.submissions.server_process import eventually
from think.observe.propagation import extract_context, inject_headers

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[LoggedServer, Collector]]:
    with serve_in_thread(FakeLLMServer()) as fake, collector() as otlp:
        env = {**model_env(fake, "text", tmp_path), "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url,
               "OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_METRIC_EXPORT_INTERVAL": "60000"}
        with logged_serve(["tests.cli.ops_agents:Plain"], env, tmp_path / "serve.log", "--otel", "--mcp",
                          ready_path=READY) as server:
            yield server, otlp


def _turns(otlp: Collector) -> list[object]:
    with otlp.lock:
        return [s for s in otlp.spans if s.name == "invoke_agent plain"]


async def test_an_http_turn_with_a_traceparent_joins_the_callers_trace(
        served: tuple[LoggedServer, Collector]) -> None:
    server, otlp = served
    body = {"id": "c1", "trigger": "submit-message", "messageId": "u1",
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
    async with httpx.AsyncClient(timeout=30) as http:
        reply = await http.post(f"{server.http}/agents/plain/bob/chat", json=body,
                                headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"})
        assert reply.status_code == 200, reply.text
        assert "text-delta" in reply.text
    await eventually(lambda: bool(_turns(otlp)))
    [turn] = _turns(otlp)
    assert turn.trace_id.hex() == TRACE_ID  # type: ignore[attr-defined]
    assert turn.parent_span_id.hex() == PARENT_ID  # type: ignore[attr-defined]
    with otlp.lock:
        [call] = [s for s in otlp.spans if s.name == "chat text"]
    assert call.trace_id.hex() == TRACE_ID and call.parent_span_id == turn.span_id  # type: ignore[attr-defined]


async def test_a_malformed_traceparent_starts_a_trace_of_its_own(served: tuple[LoggedServer, Collector]) -> None:
    server, otlp = served
    body = {"id": "c2", "trigger": "submit-message", "messageId": "u2",
            "messages": [{"id": "u2", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
    async with httpx.AsyncClient(timeout=30) as http:
        reply = await http.post(f"{server.http}/agents/plain/carol/chat", json=body,
                                headers={"traceparent": f"00-{'0' * 32}-{PARENT_ID}-01"})  # the invalid all-zero id
        assert reply.status_code == 200, reply.text
    await eventually(lambda: bool(_turns(otlp)))
    [turn] = _turns(otlp)
    assert turn.trace_id.hex() != "0" * 32 and not turn.parent_span_id  # type: ignore[attr-defined]


async def test_an_mcp_chat_call_joins_the_trace_of_the_client_span(
        telemetry: Telemetry, served: tuple[LoggedServer, Collector]) -> None:
    server, otlp = served
    with trace.get_tracer("test").start_as_current_span("caller") as caller:
        async with Client(f"{server.http}/mcp") as client:
            result = await client.call_tool("chat_plain", {"name": "dave", "message": "hi"})
            assert not result.is_error, result
    await eventually(lambda: bool(_turns(otlp)))
    [turn] = _turns(otlp)
    assert turn.trace_id == caller.get_span_context().trace_id.to_bytes(16, "big")  # type: ignore[attr-defined]
    with otlp.lock:
        [submission] = [s for s in otlp.spans if s.name == "think.submission"]
    assert turn.parent_span_id == submission.span_id  # type: ignore[attr-defined]
    assert submission.trace_id == turn.trace_id  # type: ignore[attr-defined]


def test_inject_and_extract_round_trip_a_context(telemetry: Telemetry) -> None:
    assert extract_context({}) is None
    assert extract_context({"traceparent": "garbage"}) is None
    with trace.get_tracer("test").start_as_current_span("out") as span:
        headers = inject_headers({"accept": "application/json"})
    context = span.get_span_context()
    assert headers["traceparent"].startswith(f"00-{context.trace_id:032x}-{context.span_id:016x}-")
    got = trace.get_current_span(extract_context(headers)).get_span_context()
    assert (got.trace_id, got.span_id, got.is_remote) == (context.trace_id, context.span_id, True)
    raw = [(b"Traceparent", headers["traceparent"].encode()), (b"host", b"x")]  # an ASGI scope's pairs
    assert trace.get_current_span(extract_context(raw)).get_span_context().span_id == context.span_id
