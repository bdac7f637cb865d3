"""Token usage and cost: per model call, per turn and message, and per agent.

Trusts nothing a client sends: message metadata shows usage, the ledger (written by the turn
only) is what `Think.usage()` sums. Prices come from the installed `genai-prices` table, loaded on
the first lookup; a model it does not know costs None, never a guess. The submodules load on first
use (`import think` loads only the ledger's table definition, `think.usage.schema`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from think.usage.cost import cost_of
    from think.usage.ledger import ModelTotals, UsageLedger, UsageTotals
    from think.usage.meter import StepUsage, TurnUsage, UsageMeter, describe

__all__ = ["ModelTotals", "StepUsage", "TurnUsage", "UsageLedger", "UsageMeter", "UsageTotals", "cost_of",
           "describe"]

_HOMES = {"cost_of": "cost", "ModelTotals": "ledger", "UsageLedger": "ledger", "UsageTotals": "ledger",
          "StepUsage": "meter", "TurnUsage": "meter", "UsageMeter": "meter", "describe": "meter"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'think.usage' has no attribute {name!r}")
    return getattr(importlib.import_module(f"think.usage.{home}"), name)
