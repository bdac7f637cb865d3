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
the turns they start. Metrics: see `think.observe.metrics`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from think.observe.metrics import agent_active
    from think.observe.otel import capture_content, set_capture_content
    from think.observe.spans import mcp_call, model_call, recovery, sub_agent, submission, tool_call, turn

__all__ = ["agent_active", "capture_content", "mcp_call", "model_call", "recovery", "set_capture_content",
           "sub_agent", "submission", "tool_call", "turn"]

_HOMES = {"agent_active": "metrics", "capture_content": "otel", "set_capture_content": "otel",
          "mcp_call": "spans", "model_call": "spans", "recovery": "spans", "sub_agent": "spans", "submission": "spans",
          "tool_call": "spans", "turn": "spans"}


def __getattr__(name: str) -> Any:
    """Load the helpers on first use (and keep them here: later look-ups are plain attributes)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'think.observe' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"think.observe.{home}"), name)
    globals()[name] = value
    return value
