"""How long a failed MCP connection waits before it tries again."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Seconds to wait before reconnect attempt `n` (0-based): `first`·2ⁿ, at most `most`."""

    first: float = 1.0
    most: float = 60.0

    def delay(self, attempt: int) -> float:
        return float(min(self.most, self.first * 2 ** min(attempt, 30)))
