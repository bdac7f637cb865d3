"""Durable chat recovery: a turn a crash or a stalled stream interrupted is finished (reference §4.8)."""

from think.recovery.engine import ChatRecovery
from think.recovery.policy import (
    ChatRecoveryPolicy,
    ExhaustedContext,
    RecoveryContext,
    RecoveryDecision,
    RecoveryOutcome,
)
from think.recovery.store import MIGRATIONS, Fiber, FiberStore

__all__ = ["MIGRATIONS", "ChatRecovery", "ChatRecoveryPolicy", "ExhaustedContext", "Fiber", "FiberStore",
           "RecoveryContext", "RecoveryDecision", "RecoveryOutcome"]
