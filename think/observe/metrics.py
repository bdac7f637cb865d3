"""The metrics think records (through the installed meter provider; none with metrics off):

* `think.turn.duration` (s, histogram): a turn, by agent type and outcome;
* `gen_ai.client.token.usage` (tokens, by `gen_ai.token.type` input/output): the tokens of a
  model's calls (model call durations are on the `chat` spans); inside a turn, the turn's calls
  of one model are recorded as one measurement at its end, outside one each call;
* `think.tool.calls` (observable counter): server tool calls, by tool and outcome (`ok`/`error`),
  counted in this process (a turn's at its end) and read by the SDK when it collects, so a call
  costs a dictionary update, not a measurement;
* `think.agents.active` (up-down counter): agent instances in memory, by agent type;
* `think.turns.queued` (gauge, read at each export): turns waiting for their agent's queue.

A turn's measurements are made once, after its span has ended: a turn with two model calls and
a tool call records three measurements (its duration, its input and output tokens), not seven
inside live spans (each one in a span also offers the SDK an exemplar).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from think.observe.otel import meter

if TYPE_CHECKING:
    from think.models.events import Finish

_instruments: tuple[Any, dict[str, Any]] | None = None


def _all() -> dict[str, Any] | None:
    """The instruments of the current meter (created once per meter), or None."""
    global _instruments
    m = meter()
    if m is None:
        return None
    if _instruments is None or _instruments[0] is not m:
        _instruments = (m, {
            "turn": m.create_histogram("think.turn.duration", unit="s", description="Duration of a chat turn"),
            "tokens": m.create_histogram("gen_ai.client.token.usage", unit="{token}",
                                         description="Tokens used by model calls"),
            "tools": m.create_observable_counter("think.tool.calls", callbacks=[_tool_totals], unit="{call}",
                                                 description="Server tool calls"),
            "agents": m.create_up_down_counter("think.agents.active", unit="{agent}",
                                               description="Agent instances in memory"),
            "queued": m.create_observable_gauge("think.turns.queued", callbacks=[_queued], unit="{turn}",
                                                description="Turns waiting for their agent, in this process"),
        })
    return _instruments[1]


def _get(name: str) -> Any:
    """The instrument `name` of the current meter, or None."""
    return None if (instruments := _all()) is None else instruments[name]


_ATTRIBUTES: dict[tuple[str, str, str], dict[str, Any]] = {}
"""Measurement attribute sets by (kind, name, outcome), built once each (the SDK copies what it
keeps); bounded like the other caches here."""


def _attributes(kind: str, name: str, outcome: str) -> dict[str, Any]:
    key = (kind, name, outcome)
    known = _ATTRIBUTES.get(key)
    if known is None:
        known = ({"gen_ai.agent.name": name, "think.turn.outcome": outcome} if kind == "turn"
                 else {"gen_ai.tool.name": name, "think.outcome": outcome})
        if len(_ATTRIBUTES) < 4096:
            _ATTRIBUTES[key] = known
    return known


def enabled() -> bool:
    return meter() is not None


class Tally:
    """What a running turn's calls used, recorded when the turn ends."""

    __slots__ = ("closed", "tokens", "tools")

    def __init__(self) -> None:
        self.closed = False
        """Recorded: a call still running after its turn (a task it left) records on its own."""
        self.tokens: dict[str, list[int | None]] = {}
        """model id → [input, output] tokens (None: no call reported that kind)."""
        self.tools: dict[tuple[str, str], int] = {}
        """(tool, outcome) → calls."""


CURRENT: ContextVar[Tally | None] = ContextVar("think_observe_tally", default=None)
"""The tally of the turn running in this context (a sub-agent's turn has its own)."""

_TOKEN_ATTRIBUTES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}


def _token_attributes(model_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (input, output) attribute sets of a model's token measurements, built once per model."""
    known = _TOKEN_ATTRIBUTES.get(model_id)
    if known is None:
        provider, sep, name = model_id.partition(":")
        base: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": name if sep else model_id}
        if sep:
            base["gen_ai.provider.name"] = provider
        known = ({**base, "gen_ai.token.type": "input"}, {**base, "gen_ai.token.type": "output"})
        if len(_TOKEN_ATTRIBUTES) < 1024:
            _TOKEN_ATTRIBUTES[model_id] = known
    return known


def _record_tokens(model_id: str, input_tokens: int | None, output_tokens: int | None, tokens: Any = None) -> None:
    if tokens is None and (tokens := _get("tokens")) is None:
        return
    for_input, for_output = _token_attributes(model_id)
    if input_tokens is not None:
        tokens.record(input_tokens, for_input)
    if output_tokens is not None:
        tokens.record(output_tokens, for_output)


_TOOL_CALLS: dict[tuple[str, str], int] = {}
"""Server tool calls made in this process by (tool, outcome), what `think.tool.calls` reports."""
_MAX_TOOLS = 4096
"""Distinct (tool, outcome) pairs counted by name; later new ones count under the tool `other`."""


def _tool_calls(tool: str, outcome: str, n: int) -> None:
    key = (tool, outcome)
    if key not in _TOOL_CALLS and len(_TOOL_CALLS) >= _MAX_TOOLS:
        key = ("other", outcome)
    _TOOL_CALLS[key] = _TOOL_CALLS.get(key, 0) + n


def _tool_totals(options: Any) -> Any:
    from opentelemetry.metrics import Observation

    for (tool, outcome), n in list(_TOOL_CALLS.items()):
        yield Observation(n, _attributes("tool", tool, outcome))


def turn_finished(agent_type: str, outcome: str, seconds: float, tally: Tally | None = None) -> None:
    if tally is not None:
        tally.closed = True
    if (instruments := _all()) is None:
        return
    instruments["turn"].record(seconds, _attributes("turn", agent_type, outcome))
    if tally is not None:
        if tally.tokens:
            tokens = instruments["tokens"]
            for model_id, (input_tokens, output_tokens) in tally.tokens.items():
                _record_tokens(model_id, input_tokens, output_tokens, tokens)
        for (tool, tool_outcome), n in tally.tools.items():
            _tool_calls(tool, tool_outcome, n)


def model_call_finished(model_id: str, finish: Finish | None) -> None:
    usage = finish.usage if finish is not None else None
    if usage is None:
        return
    tally = CURRENT.get()
    if tally is None or tally.closed:
        _record_tokens(model_id, usage.input_tokens, usage.output_tokens)
        return
    sums = tally.tokens.get(model_id)
    if sums is None:
        tally.tokens[model_id] = [usage.input_tokens, usage.output_tokens]
        return
    for i, value in enumerate((usage.input_tokens, usage.output_tokens)):
        if value is not None:
            sums[i] = (sums[i] or 0) + value


def tool_call_finished(tool: str, outcome: str) -> None:
    tally = CURRENT.get()
    if tally is None or tally.closed:
        if _all() is not None:
            _tool_calls(tool, outcome, 1)
        return
    key = (tool, outcome)
    tally.tools[key] = tally.tools.get(key, 0) + 1


def agent_active(agent_type: str, delta: int) -> None:
    if (c := _get("agents")) is not None:
        c.add(delta, {"gen_ai.agent.name": agent_type})


def _queued(options: Any) -> Any:
    from opentelemetry.metrics import Observation

    from think.turns.queue import LIVE

    yield Observation(sum(queue.waiting for queue in list(LIVE)))
