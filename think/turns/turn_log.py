"""The one line a finished turn leaves in the log, on the `think.turns` logger at INFO.

    assistant/alice 5f0c… model=openai:gpt-4.1-mini steps=2 tools=1 tokens=812/64 ms=1840 outcome=completed

`tokens` is input/output summed over the turn's model calls (`-` where the provider reported
none). A failed turn adds `error="…"` (shortened). The same fields ride on the record as
`record.think` (a dict), which `--log-format json` writes out as fields of their own.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from think.agent import Think
    from think.loop import LoopResult

log = logging.getLogger("think.turns")

ERROR_CHARS = 200
"""How much of a failed turn's error text its line keeps."""


def turn_clock() -> float:
    """The start time `log_turn` measures a turn's duration from."""
    return time.perf_counter()


def turn_fields(agent: Think, request_id: str, model_id: str, result: LoopResult | None, outcome: str,
                started: float, error: str | None = None) -> dict[str, Any]:
    """What the turn line says, as data."""
    steps = result.steps if result is not None else []
    usage = result.usage if result is not None else None
    fields: dict[str, Any] = {
        "agent": f"{type(agent).kebab_name()}/{agent.name}",
        "request_id": request_id,
        "model": model_id,
        "steps": len(steps),
        "tools": sum(len(step.tool_calls) for step in steps),
        "tokens_in": usage.input_tokens if usage is not None else None,
        "tokens_out": usage.output_tokens if usage is not None else None,
        "ms": round((time.perf_counter() - started) * 1000),
        "outcome": outcome,
    }
    if error is not None:
        fields["error"] = error if len(error) <= ERROR_CHARS else error[:ERROR_CHARS - 1] + "…"
    return fields


def log_turn(agent: Think, request_id: str, model_id: str, result: LoopResult | None, outcome: str,
             started: float, error: str | None = None) -> None:
    """Log the turn's line (see the module docstring); never raises."""
    if not log.isEnabledFor(logging.INFO):
        return
    try:
        f = turn_fields(agent, request_id, model_id, result, outcome, started, error)
    except Exception:  # a line in the log is never worth a failed turn
        log.debug("could not describe turn %s", request_id, exc_info=True)
        return

    def count(value: int | None) -> str:
        return "-" if value is None else str(value)

    line = (f"{f['agent']} {request_id} model={f['model']} steps={f['steps']} tools={f['tools']} "
            f"tokens={count(f['tokens_in'])}/{count(f['tokens_out'])} ms={f['ms']} outcome={outcome}")
    if "error" in f:
        line += f' error="{f["error"]}"'
    log.info("%s", line, extra={"think": f})
