"""Token usage and cost: per model call, per turn and message, and per agent.

Trusts nothing a client sends: message metadata shows usage, the ledger (written by the turn
only) is what `Think.usage()` sums. Prices come from the installed `genai-prices` table, loaded on
the first lookup; a model it does not know costs None, never a guess. The submodules load on first
use (`import think` loads only the ledger's table definition, `think.usage.schema`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from think._lazy import lazy_exports

if TYPE_CHECKING:
    from think.usage.cost import cost_of
    from think.usage.ledger import ModelTotals, UsageLedger, UsageTotals
    from think.usage.meter import StepUsage, TurnUsage, UsageMeter, describe

__all__ = ["ModelTotals", "StepUsage", "TurnUsage", "UsageLedger", "UsageMeter", "UsageTotals", "cost_of",
           "describe"]

_HOMES = {"cost_of": "think.usage.cost", "ModelTotals": "think.usage.ledger", "UsageLedger": "think.usage.ledger",
          "UsageTotals": "think.usage.ledger", "StepUsage": "think.usage.meter", "TurnUsage": "think.usage.meter",
          "UsageMeter": "think.usage.meter", "describe": "think.usage.meter"}
__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())
