"""Durable submissions: turns accepted into a ledger before the model runs, drained in order.

See `think.submissions.submissions` for the lifecycle and the recovery rules.
"""

from think.submissions.store import Submission, SubmissionStatus
from think.submissions.submissions import Submissions

__all__ = ["Submission", "SubmissionStatus", "Submissions"]
