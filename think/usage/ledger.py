"""The agent's usage ledger: one row per finished model call, in the agent's own database.

Rows are written by the turn as each model call finishes (so a crash keeps the calls it already
paid for) and only by the server: a client cannot add to or change them, unlike message metadata
it could send. Clearing the conversation keeps them: tokens spent stay spent.
`Think.usage(since=…)` sums them (`UsageTotals`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from think.storage import Database
from think.usage.cost import cost_of
from think.usage.meter import StepUsage
from think.usage.schema import MIGRATIONS

__all__ = ["MIGRATIONS", "ModelTotals", "UsageLedger", "UsageTotals"]


@dataclass(frozen=True)
class ModelTotals:
    """One model's share of the totals."""

    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cached_input_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @cached_property
    def cost(self) -> float | None:
        return cost_of(self.model, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                       cached_input_tokens=self.cached_input_tokens)


@dataclass(frozen=True)
class UsageTotals:
    """What an agent's model calls used since a moment (counts the providers did not report are 0)."""

    turns: int = 0
    by_model: tuple[ModelTotals, ...] = field(default=())

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.by_model)

    @property
    def input_tokens(self) -> int:
        return sum(m.input_tokens for m in self.by_model)

    @property
    def output_tokens(self) -> int:
        return sum(m.output_tokens for m in self.by_model)

    @property
    def reasoning_tokens(self) -> int:
        return sum(m.reasoning_tokens for m in self.by_model)

    @property
    def cached_input_tokens(self) -> int:
        return sum(m.cached_input_tokens for m in self.by_model)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @cached_property
    def cost(self) -> float | None:
        """US dollars; None unless every model's price is known (0.0 when nothing was used)."""
        costs = [m.cost for m in self.by_model]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


class UsageLedger:
    def __init__(self, db: Database) -> None:
        self.db = db

    def record(self, step: StepUsage, *, request_id: str, session_id: str, message_id: str, index: int) -> None:
        # one statement: its own implicit transaction (or part of the caller's, when one is open)
        self.db.connection.execute(
            "INSERT INTO think_usage (at, request_id, session_id, message_id, step, model, input, output, "
            "reasoning, cached) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (time.time(), request_id, session_id, message_id, index, step.model, step.input_tokens,
             step.output_tokens, step.reasoning_tokens, step.cached_input_tokens))

    def message_steps(self, message_id: str) -> tuple[StepUsage, ...]:
        """The calls recorded for a message, in order (what a recovered answer already used)."""
        rows = self.db.connection.execute(
            "SELECT model, input, output, reasoning, cached FROM think_usage WHERE message_id = ? ORDER BY seq",
            (message_id,)).fetchall()
        return tuple(StepUsage(m, i, o, r, c) for m, i, o, r, c in rows)

    def totals(self, since: datetime | float | None = None) -> UsageTotals:
        at = since.timestamp() if isinstance(since, datetime) else float(since or 0.0)
        conn = self.db.connection
        rows = conn.execute(
            "SELECT model, COUNT(*), TOTAL(input), TOTAL(output), TOTAL(reasoning), TOTAL(cached) FROM think_usage "
            "WHERE at >= ? GROUP BY model ORDER BY model", (at,)).fetchall()
        (turns,) = conn.execute("SELECT COUNT(DISTINCT request_id) FROM think_usage WHERE at >= ?", (at,)).fetchone()
        return UsageTotals(turns, tuple(ModelTotals(m, n, int(i), int(o), int(r), int(c)) for m, n, i, o, r, c in rows))
