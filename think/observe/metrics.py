"""The metrics think records (through the installed meter provider; none with metrics off):

* `think.turn.duration` (s, histogram): a turn, by agent type and outcome;
* `gen_ai.client.token.usage` (tokens, by `gen_ai.token.type` input/output): each model call,
  as the GenAI conventions name it (model call durations are on the `chat` spans);
* `think.tool.calls` (counter): server tool calls, by tool and outcome (`ok`/`error`);
* `think.agents.active` (up-down counter): agent instances in memory, by agent type;
* `think.turns.queued` (gauge, read at each export): turns waiting for their agent's queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from think.observe.otel import meter

if TYPE_CHECKING:
    from think.models.events import Finish

_instruments: tuple[Any, dict[str, Any]] | None = None


def _get(name: str) -> Any:
    """The instrument `name` of the current meter (created once per meter), or None."""
    global _instruments
    m = meter()
    if m is None:
        return None
    if _instruments is None or _instruments[0] is not m:
        _instruments = (m, {
            "turn": m.create_histogram("think.turn.duration", unit="s", description="Duration of a chat turn"),
            "tokens": m.create_histogram("gen_ai.client.token.usage", unit="{token}",
                                         description="Tokens used by a model call"),
            "tools": m.create_counter("think.tool.calls", unit="{call}", description="Server tool calls"),
            "agents": m.create_up_down_counter("think.agents.active", unit="{agent}",
                                               description="Agent instances in memory"),
            "queued": m.create_observable_gauge("think.turns.queued", callbacks=[_queued], unit="{turn}",
                                                description="Turns waiting for their agent, in this process"),
        })
    return _instruments[1][name]


def turn_finished(agent_type: str, outcome: str, seconds: float) -> None:
    if (h := _get("turn")) is not None:
        h.record(seconds, {"gen_ai.agent.name": agent_type, "think.turn.outcome": outcome})


def model_call_finished(model_id: str, finish: Finish | None) -> None:
    usage = finish.usage if finish is not None else None
    if usage is None or (tokens := _get("tokens")) is None:
        return
    provider, sep, name = model_id.partition(":")
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": name if sep else model_id}
    if sep:
        attributes["gen_ai.provider.name"] = provider
    for kind, value in (("input", usage.input_tokens), ("output", usage.output_tokens)):
        if value is not None:
            tokens.record(value, {**attributes, "gen_ai.token.type": kind})


def tool_call_finished(tool: str, outcome: str) -> None:
    if (c := _get("tools")) is not None:
        c.add(1, {"gen_ai.tool.name": tool, "think.outcome": outcome})


def agent_active(agent_type: str, delta: int) -> None:
    if (c := _get("agents")) is not None:
        c.add(delta, {"gen_ai.agent.name": agent_type})


def _queued(options: Any) -> Any:
    from opentelemetry.metrics import Observation

    from think.turns.queue import LIVE

    yield Observation(sum(queue.waiting for queue in list(LIVE)))
