"""The spans of a turn: `turn` → `model_call` (one per model call, retries included) and
`tool_call` (one per tool call), and the spans around turns that something else starts:
`recovery`, `submission` and `sub_agent` (whose child turn runs inside it, so the child's spans
join the parent's trace). Names and attributes follow the OpenTelemetry GenAI conventions.

Each helper returns a context manager whose value is a handle with `finished(...)`, which records
the outcome; with tracing and metrics off it is a shared do-nothing handle (one provider check).
They are plain classes, not generator context managers, and a span's outcome attributes are
set only while it records (a sampled-out span gets none), because a turn opens several of them.
A turn's token and tool-call metrics are tallied while it runs and recorded once at its end
(`think.observe.metrics`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import orjson
from opentelemetry.context import attach, detach
from opentelemetry.trace import set_span_in_context

from think.observe import metrics
from think.observe.otel import capture_content, trace_api, tracer
from think.observe.propagation import without_current_span

if TYPE_CHECKING:
    from think.models.base import ModelRequest
    from think.models.events import Finish
    from think.usage.meter import TurnUsage


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


class _Nothing:
    """What the helpers give with tracing and metrics off: enters as itself, does nothing."""

    span = None

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def finished(self, *args: Any, **kwargs: Any) -> None:
        pass


NOTHING: Any = _Nothing()


class _Span:
    """A span started on enter (and made current), ended on exit; a raised exception is
    recorded on it. Subclasses add `finished(...)`."""

    __slots__ = ("_attributes", "_live", "_name", "_token", "_tracer", "parent", "span")

    def __init__(self, tracer: Any, name: str, attributes: dict[str, Any]) -> None:
        self._tracer = tracer
        self._name = name
        self._attributes = attributes
        self._live = False
        self.span: Any = None
        self.parent: Any = None
        """A context captured elsewhere (another process's, via `think.observe.propagation`):
        the span's parent when no span is current where it starts."""

    def __enter__(self) -> Any:
        parent = self.parent if self.parent is not None and without_current_span() else None
        self.span = span = self._tracer.start_span(self._name, parent, attributes=self._attributes)
        self._live = span.is_recording()  # False for a sampled-out span: it takes no attributes
        self._token = attach(set_span_in_context(span))
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        span = self.span
        try:
            if exc is not None and self._live and not isinstance(exc, GeneratorExit):
                span.record_exception(exc)
                api = trace_api()
                span.set_status(api.Status(api.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:500]))
        finally:
            self._live = False
            detach(self._token)
            span.end()

    def recording(self) -> bool:
        return self._live

    def error(self, message: str, kind: str = "error") -> None:
        if self.recording():
            api = trace_api()
            self.span.set_status(api.Status(api.StatusCode.ERROR, message[:500]))
            self.span.set_attribute("error.type", kind)


# ---- a turn -----------------------------------------------------------------------------------------


class Turn(_Span):
    """A turn's span; its metrics (duration, and the tally of its calls) are recorded on exit."""

    __slots__ = ("_agent_type", "_started", "_tally_token", "outcome", "tally")

    def __init__(self, tracer: Any, name: str, attributes: dict[str, Any], agent_type: str) -> None:
        super().__init__(tracer, name, attributes)
        self._agent_type = agent_type
        self.outcome = "error"
        self.tally = metrics.Tally()

    def __enter__(self) -> Any:
        self._started = time.perf_counter()
        self._tally_token = metrics.CURRENT.set(self.tally)
        return super().__enter__()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        try:
            super().__exit__(kind, exc, tb)
        finally:
            metrics.CURRENT.reset(self._tally_token)
            metrics.turn_finished(self._agent_type, self.outcome, time.perf_counter() - self._started, self.tally)

    def finished(self, status: str, error: str | None, usage: TurnUsage | None) -> None:
        self.outcome = status
        if not self._live:
            return
        found: dict[str, Any] = {"think.turn.outcome": status}
        if usage is not None:
            if (tokens := usage.input_tokens) is not None:
                found["gen_ai.usage.input_tokens"] = tokens
            if (tokens := usage.output_tokens) is not None:
                found["gen_ai.usage.output_tokens"] = tokens
        self.span.set_attributes(found)
        if status == "error":
            self.error(error or "the turn failed", "turn_error")


class _MeteredTurn(Turn):
    """A turn with metrics but no tracing: no span."""

    __slots__ = ()

    def __enter__(self) -> Any:
        self._started = time.perf_counter()
        self._tally_token = metrics.CURRENT.set(self.tally)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        metrics.CURRENT.reset(self._tally_token)
        metrics.turn_finished(self._agent_type, self.outcome, time.perf_counter() - self._started, self.tally)


def turn(agent_type: str, name: str, request_id: str, *, session_id: str, continuation: bool,
         parent: Any = None) -> Any:
    """One chat turn of `agent_type/name` (named `invoke_agent <type>`); `parent`: the context
    its request came with from another process (`TurnRequest.trace_parent`)."""
    if (t := tracer()) is None:
        return _MeteredTurn(None, "", {}, agent_type) if metrics.enabled() else NOTHING
    traced = Turn(t, f"invoke_agent {agent_type}", {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_type, "gen_ai.agent.id": name,
        "gen_ai.conversation.id": f"{agent_type}/{name}/{session_id}" if session_id else f"{agent_type}/{name}",
        "think.request_id": request_id, "think.continuation": continuation,
    }, agent_type)
    traced.parent = parent
    return traced


# ---- a model call -----------------------------------------------------------------------------------


class ModelCall(_Span):
    __slots__ = ("model_id",)

    def __init__(self, tracer: Any, name: str, attributes: dict[str, Any], model_id: str) -> None:
        super().__init__(tracer, name, attributes)
        self.model_id = model_id

    def finished(self, finish: Finish | None, step: Any = None) -> None:
        metrics.model_call_finished(self.model_id, finish)
        if not self._live:
            return
        span = self.span
        if finish is None:
            self.error("the model stream ended without a finish event")
            return
        found: dict[str, Any] = {"gen_ai.response.finish_reasons": (finish.reason,)}
        usage = finish.usage
        if usage is not None:
            if (value := usage.input_tokens) is not None:
                found["gen_ai.usage.input_tokens"] = value
            if (value := usage.output_tokens) is not None:
                found["gen_ai.usage.output_tokens"] = value
            if (value := usage.cached_input_tokens) is not None:
                found["gen_ai.usage.cache_read.input_tokens"] = value
            if (value := usage.reasoning_tokens) is not None:
                found["gen_ai.usage.reasoning.output_tokens"] = value
        span.set_attributes(found)
        if finish.reason == "error":
            self.error(finish.error or "the model failed", str(finish.status) if finish.status else "model_error")
        if step is not None and capture_content():
            from think.observe.content import output_parts

            parts = output_parts(step.blocks, [(c.id, c.name, c.input if c.input is not None else c.raw)
                                               for c in step.calls.values()])
            span.set_attribute("gen_ai.output.messages", _json([{"role": "assistant", "parts": parts,
                                                                  "finish_reason": finish.reason}]))


class _MeteredCall:
    __slots__ = ("model_id",)

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def finished(self, finish: Finish | None, step: Any = None) -> None:
        metrics.model_call_finished(self.model_id, finish)


_MODEL_ATTRIBUTES: dict[str, tuple[str, dict[str, Any]]] = {}


def _model_attributes(model_id: str) -> tuple[str, dict[str, Any]]:
    """The span name and fixed attributes of a model's calls (built once per model id)."""
    known = _MODEL_ATTRIBUTES.get(model_id)
    if known is None:
        provider, sep, name = model_id.partition(":")
        if not sep:
            name = model_id
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": name}
        if sep:
            attributes["gen_ai.provider.name"] = provider
        if len(_MODEL_ATTRIBUTES) < 1024:
            _MODEL_ATTRIBUTES[model_id] = (f"chat {name}", attributes)
        known = (f"chat {name}", attributes)
    return known


def model_call(model_id: str, request: ModelRequest) -> Any:
    """One call of a model (named `chat <model>`)."""
    if (t := tracer()) is None:
        return _MeteredCall(model_id) if metrics.enabled() else NOTHING
    name, fixed = _model_attributes(model_id)
    attributes = fixed.copy()
    settings = request.settings
    if settings.max_output_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = settings.max_output_tokens
    if settings.temperature is not None:
        attributes["gen_ai.request.temperature"] = settings.temperature
    if settings.top_p is not None:
        attributes["gen_ai.request.top_p"] = settings.top_p
    if capture_content():
        from think.observe.content import input_messages

        attributes["gen_ai.system_instructions"] = _json([{"type": "text", "content": request.system}])
        attributes["gen_ai.input.messages"] = _json(input_messages(request.messages))
    return ModelCall(t, name, attributes, model_id)


# ---- a tool call ------------------------------------------------------------------------------------


class ToolCall(_Span):
    __slots__ = ("outcome", "tool")

    def __init__(self, tracer: Any, name: str, attributes: dict[str, Any], tool: str) -> None:
        super().__init__(tracer, name, attributes)
        self.tool = tool
        self.outcome = "ok"

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        try:
            super().__exit__(kind, exc, tb)
        finally:
            metrics.tool_call_finished(self.tool, self.outcome)

    def finished(self, *, error: str | None, output: Any = None) -> None:
        if error is not None:
            self.outcome = "error"
            self.error(error, "tool_error")
        elif self._live and capture_content():
            self.span.set_attribute("gen_ai.tool.call.result", _json(output))


class _MeteredTool:
    __slots__ = ("outcome", "tool")

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.outcome = "ok"

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        metrics.tool_call_finished(self.tool, self.outcome)

    def finished(self, *, error: str | None, output: Any = None) -> None:
        self.outcome = "error" if error is not None else "ok"


def tool_call(name: str, call_id: str, arguments: Any) -> Any:
    """One server tool call (named `execute_tool <tool>`)."""
    if (t := tracer()) is None:
        return _MeteredTool(name) if metrics.enabled() else NOTHING
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                  "gen_ai.tool.call.id": call_id, "gen_ai.tool.type": "function"}
    if capture_content():
        attributes["gen_ai.tool.call.arguments"] = _json(arguments)
    return ToolCall(t, f"execute_tool {name}", attributes, name)


# ---- what starts turns besides a client ---------------------------------------------------------------


class Around(_Span):
    __slots__ = ()

    def finished(self, status: str, error: str | None = None) -> None:
        if self.recording():
            self.span.set_attribute("think.outcome", status)
            if status == "error":
                self.error(error or "failed")


def recovery(agent_type: str, request_id: str, *, recovers: str, attempt: int, kind: str) -> Any:
    """A recovery attempt of an interrupted turn; the recovered turn is its child."""
    if (t := tracer()) is None:
        return NOTHING
    return Around(t, "think.recovery", {"think.agent.type": agent_type, "think.request_id": request_id,
                                        "think.recovery.recovers": recovers, "think.recovery.attempt": attempt,
                                        "think.recovery.kind": kind})


def submission(agent_type: str, submission_id: str, *, resume: bool, parent: Any = None) -> Any:
    """A durable submission's run; its turn is the child. `parent`: the context it was submitted
    in (`think.observe.propagation.parent_for_work`), when that is known in this process."""
    if (t := tracer()) is None:
        return NOTHING
    traced = Around(t, "think.submission", {"think.agent.type": agent_type, "think.submission_id": submission_id,
                                            "think.submission.resume": resume})
    traced.parent = parent
    return traced


def sub_agent(agent_type: str, run_id: str) -> Any:
    """A parent's call of a sub-agent (inside the parent's tool call); the child's turn is its child."""
    if (t := tracer()) is None:
        return NOTHING
    return Around(t, f"sub_agent {agent_type}", {"think.sub_agent.type": agent_type, "think.sub_agent.run_id": run_id})


def mcp_call(server: str, tool: str, transport: str) -> Any:
    """A call of an MCP server's tool (`mcp.call_tool <server>/<tool>`, inside the `execute_tool` span
    of the merged tool, or on its own for a direct `call_mcp_tool`)."""
    if (t := tracer()) is None:
        return NOTHING
    return Around(t, f"mcp.call_tool {server}/{tool}", {"mcp.server.name": server, "mcp.tool.name": tool,
                                                        "mcp.transport": transport, "gen_ai.tool.name": tool})
