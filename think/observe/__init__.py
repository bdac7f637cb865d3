"""Tracing and metrics with OpenTelemetry: the narrow functions the turn pipeline calls.

Trusts nothing and sends nothing by itself: spans and metrics go to the globally installed
OpenTelemetry providers, and there are none until the app installs them or `think serve --otel`
(or an `OTEL_EXPORTER_OTLP_*ENDPOINT` variable) installs OTLP export (`think.observe.setup`).
With none installed, each helper costs a provider check. Prompts, answers and tool
arguments/results are recorded only with `set_capture_content(True)` or
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. The OpenTelemetry API loads with the
first turn, not with `import think`.

The span tree of a turn: `invoke_agent <agent>` → `chat <model>` per model call and
`execute_tool <tool>` per tool call (an MCP server's tool holds a `mcp.call_tool <server>/<tool>`);
a sub-agent call (`sub_agent <type>`, inside the parent's
`execute_tool`) holds the child's `invoke_agent`; `think.recovery` and `think.submission` hold
the turns they start. Metrics: see `think.observe.metrics`. Across processes: an HTTP request's
W3C `traceparent` parents the turn or submission it starts; `inject_headers(headers)` adds the
current context to a request this process makes (`think.observe.propagation`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from think._lazy import lazy_exports

if TYPE_CHECKING:
    from think.observe.metrics import agent_active
    from think.observe.otel import capture_content, set_capture_content
    from think.observe.propagation import extract_context, inject_headers
    from think.observe.spans import mcp_call, model_call, recovery, sub_agent, submission, tool_call, turn

__all__ = ["agent_active", "capture_content", "extract_context", "inject_headers", "mcp_call", "model_call",
           "recovery", "set_capture_content", "sub_agent", "submission", "tool_call", "turn"]

_HOMES = {"agent_active": "think.observe.metrics", "capture_content": "think.observe.otel",
          "set_capture_content": "think.observe.otel", "extract_context": "think.observe.propagation",
          "inject_headers": "think.observe.propagation", **{name: "think.observe.spans" for name in (
              "mcp_call", "model_call", "recovery", "sub_agent", "submission", "tool_call", "turn")}}

# Load the helpers on first use (and keep them here: later look-ups are plain attributes).
__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())
