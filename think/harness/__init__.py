"""The original's `ThinkHarness` face: an options object and many session handles over the same
engine as `Think` (turns, submissions, sessions). What a client may claim through it is decided
in `think.turns.trust` (`client_input`), as for the WebSocket."""

from think.harness.agent import RecoveryPolicy
from think.harness.harness import HarnessSessions, ThinkHarness
from think.harness.session import Accepted, Answered, HarnessSession, InFlight, Prompted, Unanswered

__all__ = ["Accepted", "Answered", "HarnessSession", "HarnessSessions", "InFlight", "Prompted", "RecoveryPolicy",
           "ThinkHarness", "Unanswered"]
