"""The spans of a turn: `turn` → `model_call` (one per model call, retries included) and
`tool_call` (one per tool call), and the spans around turns that something else starts:
`recovery`, `submission` and `sub_agent` (whose child turn runs inside it, so the child's spans
join the parent's trace). Names and attributes follow the OpenTelemetry GenAI conventions.

Each helper is a context manager yielding a handle whose `finished(...)` records the outcome;
with tracing off it yields a shared do-nothing handle and costs one provider check.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import orjson

from think.observe import metrics
from think.observe.otel import capture_content, context_api, trace_api, tracer

if TYPE_CHECKING:
    from think.models.base import ModelRequest
    from think.models.events import Finish
    from think.usage.meter import TurnUsage


class _Span:
    """A live span and what its outcome adds to it."""

    def __init__(self, span: Any) -> None:
        self.span = span

    def error(self, message: str, kind: str = "error") -> None:
        api = trace_api()
        self.span.set_status(api.Status(api.StatusCode.ERROR, message[:500]))
        self.span.set_attribute("error.type", kind)


class _Nothing:
    """What the helpers yield when tracing is off."""

    span = None

    def finished(self, *args: Any, **kwargs: Any) -> None:
        pass


NOTHING: Any = _Nothing()


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def _split(model_id: str) -> tuple[str | None, str]:
    provider, sep, name = model_id.partition(":")
    return (provider, name) if sep else (None, model_id)


@contextmanager
def _span(name: str, attributes: dict[str, Any], handle: type[_Span]) -> Iterator[Any]:
    t = tracer()
    if t is None:
        yield NOTHING
        return
    api, context = trace_api(), context_api()
    span = t.start_span(name, attributes=attributes)
    token = context.attach(api.set_span_in_context(span))
    try:
        yield handle(span)
    except BaseException as exc:
        if not isinstance(exc, GeneratorExit):
            span.record_exception(exc)
            span.set_status(api.Status(api.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:500]))
        raise
    finally:
        context.detach(token)
        span.end()


# ---- a turn -----------------------------------------------------------------------------------------


class Turn(_Span):
    def finished(self, status: str, error: str | None, usage: TurnUsage | None) -> None:
        found: dict[str, Any] = {"think.turn.outcome": status}
        if usage is not None:
            if (tokens := usage.input_tokens) is not None:
                found["gen_ai.usage.input_tokens"] = tokens
            if (tokens := usage.output_tokens) is not None:
                found["gen_ai.usage.output_tokens"] = tokens
        self.span.set_attributes(found)
        if status == "error":
            self.error(error or "the turn failed", "turn_error")


@contextmanager
def turn(agent_type: str, name: str, request_id: str, *, session_id: str, continuation: bool) -> Iterator[Any]:
    """One chat turn of `agent_type/name` (named `invoke_agent <type>`)."""
    started = time.perf_counter()
    outcome = ["error"]
    t = tracer()
    try:
        if t is None:
            yield _Metered(outcome)
            return
        with _span(f"invoke_agent {agent_type}", {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_type, "gen_ai.agent.id": name,
            "gen_ai.conversation.id": f"{agent_type}/{name}/{session_id}" if session_id else f"{agent_type}/{name}",
            "think.request_id": request_id, "think.continuation": continuation,
        }, _TracedTurn) as traced:
            traced.outcome = outcome
            yield traced
    finally:
        metrics.turn_finished(agent_type, outcome[0], time.perf_counter() - started)


class _Metered:
    """A turn's handle with tracing off: metrics still see its outcome."""

    def __init__(self, outcome: list[str]) -> None:
        self.outcome = outcome

    def finished(self, status: str, error: str | None, usage: TurnUsage | None) -> None:
        self.outcome[0] = status


class _TracedTurn(Turn):
    outcome: list[str]

    def finished(self, status: str, error: str | None, usage: TurnUsage | None) -> None:
        self.outcome[0] = status
        super().finished(status, error, usage)


# ---- a model call -----------------------------------------------------------------------------------


class ModelCall(_Span):
    model_id = ""
    started = 0.0

    def finished(self, finish: Finish | None, step: Any = None) -> None:
        span = self.span
        if finish is None:
            self.error("the model stream ended without a finish event")
            return
        found: dict[str, Any] = {"gen_ai.response.finish_reasons": [finish.reason]}
        usage = finish.usage
        if usage is not None:
            for key, value in (("gen_ai.usage.input_tokens", usage.input_tokens),
                               ("gen_ai.usage.output_tokens", usage.output_tokens),
                               ("gen_ai.usage.cache_read.input_tokens", usage.cached_input_tokens),
                               ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens)):
                if value is not None:
                    found[key] = value
        span.set_attributes(found)
        if finish.reason == "error":
            self.error(finish.error or "the model failed", str(finish.status) if finish.status else "model_error")
        if capture_content() and step is not None:
            from think.observe.content import output_parts

            parts = output_parts(step.blocks, [(c.id, c.name, c.input if c.input is not None else c.raw)
                                               for c in step.calls.values()])
            span.set_attribute("gen_ai.output.messages", _json([{"role": "assistant", "parts": parts,
                                                                  "finish_reason": finish.reason}]))


@contextmanager
def model_call(model_id: str, request: ModelRequest) -> Iterator[Any]:
    """One call of a model (named `chat <model>`)."""
    finish_box: list[Finish | None] = [None]
    t = tracer()
    provider, name = _split(model_id)
    try:
        if t is None:
            yield _MeteredCall(finish_box)
            return
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": name,
                                      "think.model_id": model_id}
        if provider:
            attributes["gen_ai.provider.name"] = provider
        settings = request.settings
        for key, value in (("gen_ai.request.max_tokens", settings.max_output_tokens),
                           ("gen_ai.request.temperature", settings.temperature),
                           ("gen_ai.request.top_p", settings.top_p)):
            if value is not None:
                attributes[key] = value
        if capture_content():
            from think.observe.content import input_messages

            attributes["gen_ai.system_instructions"] = _json([{"type": "text", "content": request.system}])
            attributes["gen_ai.input.messages"] = _json(input_messages(request.messages))
        with _span(f"chat {name}", attributes, _TracedCall) as traced:
            traced.box = finish_box
            yield traced
    finally:
        metrics.model_call_finished(model_id, finish_box[0])


class _MeteredCall:
    def __init__(self, box: list[Finish | None]) -> None:
        self.box = box

    def finished(self, finish: Finish | None, step: Any = None) -> None:
        self.box[0] = finish


class _TracedCall(ModelCall):
    box: list[Finish | None]

    def finished(self, finish: Finish | None, step: Any = None) -> None:
        self.box[0] = finish
        super().finished(finish, step)


# ---- a tool call ------------------------------------------------------------------------------------


class ToolCall(_Span):
    def finished(self, *, error: str | None, output: Any = None) -> None:
        if error is not None:
            self.error(error, "tool_error")
        elif capture_content():
            self.span.set_attribute("gen_ai.tool.call.result", _json(output))


@contextmanager
def tool_call(name: str, call_id: str, arguments: Any) -> Iterator[Any]:
    """One server tool call (named `execute_tool <tool>`)."""
    outcome = ["ok"]
    t = tracer()
    try:
        if t is None:
            yield _MeteredTool(outcome)
            return
        attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                      "gen_ai.tool.call.id": call_id, "gen_ai.tool.type": "function"}
        if capture_content():
            attributes["gen_ai.tool.call.arguments"] = _json(arguments)
        with _span(f"execute_tool {name}", attributes, _TracedTool) as traced:
            traced.outcome = outcome
            yield traced
    finally:
        metrics.tool_call_finished(name, outcome[0])


class _MeteredTool:
    def __init__(self, outcome: list[str]) -> None:
        self.outcome = outcome

    def finished(self, *, error: str | None, output: Any = None) -> None:
        self.outcome[0] = "error" if error is not None else "ok"


class _TracedTool(ToolCall):
    outcome: list[str]

    def finished(self, *, error: str | None, output: Any = None) -> None:
        self.outcome[0] = "error" if error is not None else "ok"
        super().finished(error=error, output=output)


# ---- what starts turns besides a client ---------------------------------------------------------------


class Around(_Span):
    def finished(self, status: str, error: str | None = None) -> None:
        self.span.set_attribute("think.outcome", status)
        if status == "error":
            self.error(error or "failed")


@contextmanager
def recovery(agent_type: str, request_id: str, *, recovers: str, attempt: int, kind: str) -> Iterator[Any]:
    """A recovery attempt of an interrupted turn; the recovered turn is its child."""
    with _span("think.recovery", {"think.agent.type": agent_type, "think.request_id": request_id,
                                  "think.recovery.recovers": recovers, "think.recovery.attempt": attempt,
                                  "think.recovery.kind": kind}, Around) as span:
        yield span


@contextmanager
def submission(agent_type: str, submission_id: str, *, resume: bool) -> Iterator[Any]:
    """A durable submission's run; its turn is the child."""
    with _span("think.submission", {"think.agent.type": agent_type, "think.submission_id": submission_id,
                                    "think.submission.resume": resume}, Around) as span:
        yield span


@contextmanager
def sub_agent(agent_type: str, run_id: str) -> Iterator[Any]:
    """A parent's call of a sub-agent (inside the parent's tool call); the child's turn is its child."""
    with _span(f"sub_agent {agent_type}", {"think.sub_agent.type": agent_type, "think.sub_agent.run_id": run_id},
               Around) as span:
        yield span


@contextmanager
def mcp_call(server: str, tool: str, transport: str) -> Iterator[Any]:
    """A call of an MCP server's tool (`mcp.call_tool <server>/<tool>`, inside the `execute_tool` span
    of the merged tool, or on its own for a direct `call_mcp_tool`)."""
    with _span(f"mcp.call_tool {server}/{tool}", {"mcp.server.name": server, "mcp.tool.name": tool,
                                                  "mcp.transport": transport, "gen_ai.tool.name": tool},
               Around) as span:
        yield span
