"""A turn's token usage: per model call (`StepUsage`) and summed (`TurnUsage`), and its JSON form.

The assistant message keeps it in `metadata["usage"]`, in the AI SDK's camelCase names:

    {"model": "openai:gpt-4.1-mini", "inputTokens": 812, "outputTokens": 64, "totalTokens": 876,
     "reasoningTokens": 0, "cachedInputTokens": 512, "costUsd": 0.000403,
     "steps": [{"model": "openai:gpt-4.1-mini", "inputTokens": 400, "outputTokens": 40, …}, …]}

A count the provider did not report is left out (None in Python); `costUsd` is left out when the
price of any step is unknown. `UsageMeter` adds a turn's steps as they finish (starting from the
calls the ledger has for a recovered message) and writes each one to the agent's usage ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from think.models.events import Usage
from think.usage.cost import cost_of, load_prices, priceable

_FIELDS = (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"),
           ("reasoning_tokens", "reasoningTokens"), ("cached_input_tokens", "cachedInputTokens"))


def _sum(values: Sequence[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


@dataclass(frozen=True)
class StepUsage:
    """What one model call used."""

    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None

    @classmethod
    def of(cls, model: str, usage: Usage | None) -> StepUsage:
        if usage is None:
            return cls(model)
        return cls(model, usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, usage.cached_input_tokens)

    @property
    def total_tokens(self) -> int | None:
        return _sum([self.input_tokens, self.output_tokens])

    @cached_property
    def cost(self) -> float | None:
        """US dollars, from the price table; None when the model's price is unknown."""
        return cost_of(self.model, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                       cached_input_tokens=self.cached_input_tokens)

    def to_json(self, *, with_cost: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model}
        for name, key in _FIELDS:
            if (value := getattr(self, name)) is not None:
                out[key] = value
        if (total := self.total_tokens) is not None:
            out["totalTokens"] = total
        if with_cost and (cost := self.cost) is not None:
            out["costUsd"] = cost
        return out

    @classmethod
    def from_json(cls, data: Any) -> StepUsage | None:
        if not isinstance(data, dict) or not isinstance(data.get("model"), str):
            return None
        counts = {name: data[key] for name, key in _FIELDS
                  if isinstance(data.get(key), int) and not isinstance(data.get(key), bool) and data[key] >= 0}
        return cls(data["model"], **counts)


@dataclass(frozen=True)
class TurnUsage:
    """The usage of a turn's (or a message's) model calls, in order."""

    steps: tuple[StepUsage, ...] = ()

    @property
    def model(self) -> str | None:
        """The model of the last call (None before any)."""
        return self.steps[-1].model if self.steps else None

    @property
    def input_tokens(self) -> int | None:
        return _sum([s.input_tokens for s in self.steps])

    @property
    def output_tokens(self) -> int | None:
        return _sum([s.output_tokens for s in self.steps])

    @property
    def reasoning_tokens(self) -> int | None:
        return _sum([s.reasoning_tokens for s in self.steps])

    @property
    def cached_input_tokens(self) -> int | None:
        return _sum([s.cached_input_tokens for s in self.steps])

    @property
    def total_tokens(self) -> int | None:
        return _sum([self.input_tokens, self.output_tokens])

    @cached_property
    def cost(self) -> float | None:
        """US dollars; None unless every call's model has a known price (computed on first use)."""
        costs = [s.cost for s in self.steps]
        if not costs or any(c is None for c in costs):
            return None
        return sum(c for c in costs if c is not None)

    def to_json(self, *, with_cost: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model} if self.model is not None else {}
        for name, key in (*_FIELDS, ("total_tokens", "totalTokens")):
            if (value := getattr(self, name)) is not None:
                out[key] = value
        if with_cost and (cost := self.cost) is not None:
            out["costUsd"] = cost
        out["steps"] = [s.to_json(with_cost=with_cost) for s in self.steps]
        return out

    @classmethod
    def from_json(cls, data: Any) -> TurnUsage:
        """The usage a message's metadata holds (empty for anything else)."""
        if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
            return cls()
        return cls(tuple(s for s in map(StepUsage.from_json, data["steps"]) if s is not None))

    @classmethod
    def of_message(cls, metadata: Any) -> TurnUsage:
        return cls.from_json(metadata.get("usage") if isinstance(metadata, dict) else None)


class UsageMeter:
    """Adds up a turn's steps; `on_step` sees each new one (the ledger's writer)."""

    def __init__(self, prior: TurnUsage | None = None,
                 on_step: Callable[[StepUsage, int], None] | None = None) -> None:
        self.prior = prior or TurnUsage()
        self.turn = TurnUsage()
        """This turn's own steps (what `TurnResult.usage` reports)."""
        self.on_step = on_step
        self._final: tuple[TurnUsage, dict[str, Any]] | None = None  # `final()` of these steps

    def add(self, model: str, usage: Usage | None) -> None:
        step = StepUsage.of(model, usage)
        self.turn = TurnUsage((*self.turn.steps, step))
        if self.on_step is not None:
            self.on_step(step, len(self.turn.steps) - 1)

    @property
    def message(self) -> TurnUsage:
        """What the message holds: the recovered message's steps, then this turn's."""
        return TurnUsage((*self.prior.steps, *self.turn.steps))

    async def final(self) -> dict[str, Any]:
        """The message's usage as its metadata keeps it, with the cost (the price table is loaded
        in a worker thread the first time, not in the event loop). Asked again before another
        step is added, it is the same value (the finish chunk's and the reply's)."""
        turn = self.turn  # a new value at every step: what `final()` gave for it is still right
        if self._final is not None and self._final[0] is turn:
            return self._final[1]
        message = self.message
        if any(priceable(step.model) for step in message.steps):
            await load_prices()
        final = message.to_json(with_cost=True)
        self._final = (turn, final)
        return final


def format_cost(cost: float) -> str:
    """US dollars as a person reads them: `$0.000412`, `$1.25`."""
    return f"${cost:.6f}".rstrip("0").rstrip(".") if cost < 1 else f"${cost:.2f}"


def describe(usages: Sequence[Any]) -> str | None:
    """The usage JSON of one or more messages (their `metadata["usage"]`) as one short phrase,
    `812 in · 64 out · $0.000403`, using the cost the server stored (the price is left out unless
    every message has one); None when none of them has a token count."""
    found = [u for u in usages if isinstance(u, dict) and isinstance(u.get("steps"), list)
             and ("inputTokens" in u or "outputTokens" in u)]
    if not found:
        return None

    def total(key: str) -> str:
        values = [u[key] for u in found if isinstance(u.get(key), int | float)]
        return f"{sum(values):,}" if values else "?"

    text = f"{total('inputTokens')} in · {total('outputTokens')} out"
    costs = [u.get("costUsd") for u in found]
    if all(isinstance(c, int | float) for c in costs):
        text += f" · {format_cost(sum(c for c in costs if isinstance(c, int | float)))}"
    return text
