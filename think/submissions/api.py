"""The submission methods of `Think` (a mixin: the work is done by `Submissions`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from think.protocol.frames import ClientToolSchema
from think.submissions.store import Submission, SubmissionStatus
from think.submissions.submissions import CancelOutcome, Submissions
from think.turns.callbacks import MessageLike
from think.turns.turn import WhenBusy


class SubmissionAPI:
    """Durable, idempotent, FIFO turns: `submit_messages` and friends (see `think.submissions`)."""

    submission_wake_after: ClassVar[float] = 30.0
    """Seconds within which a restarted server resumes unfinished submissions on its own."""

    submissions: Submissions

    async def submit_messages(self, messages: MessageLike | Sequence[MessageLike], *, submission_id: str | None = None,
                              idempotency_key: str | None = None, metadata: Any = None,
                              session: str = "", when_busy: WhenBusy = "queue",
                              client_tools: Sequence[ClientToolSchema | Mapping[str, Any]] | None = None) -> Submission:
        """Accept a turn durably and return at once, before the model runs (safe inside turns).

        `messages` is one message (a string is a user message) or a list of them.
        The messages are stored in the ledger and appended to the session when the submission's
        turn starts, after every submission accepted before it. A known `submission_id` or
        `idempotency_key` returns the existing record with `accepted=False` instead of a second
        turn; an id and a key that name two different submissions raise `ProtocolError`.
        `when_busy="steer"`: while a turn of the session runs, the messages join it at its next
        step boundary (ahead of pending submissions) instead of waiting (`think.turns.steer`);
        they are stored before this returns, so a kill before the boundary leaves them pending.
        `client_tools`: tool schemas (`ClientToolSchema` or `{name, description, parameters}`) a
        client runs, offered to this turn and kept for the session's later answers and
        continuations; a name a server tool has is ignored (`think.turns.trust`).
        """
        return await self.submissions.submit(messages, submission_id=submission_id,
                                             idempotency_key=idempotency_key, metadata=metadata, session=session,
                                             when_busy=when_busy, client_tools=client_tools)

    def inspect_submission(self, submission_id: str) -> Submission | None:
        return self.submissions.inspect(submission_id)

    def list_submissions(self, *, status: SubmissionStatus | Sequence[SubmissionStatus] | None = None,
                         limit: int | None = None) -> list[Submission]:
        """Submissions in acceptance order, optionally only those with the given status(es)."""
        return self.submissions.list(status, limit)

    async def cancel_submission(self, submission_id: str, reason: str | None = None) -> CancelOutcome:
        """Abort a submission: a pending one never touches the transcript; a running turn stops
        (its partial reply is kept). Returns `"cancelled"`, `"already_terminal"` (it had finished:
        nothing changes) or `"not_found"`; `inspect_submission` has the record."""
        return await self.submissions.cancel(submission_id, reason)

    def delete_submission(self, submission_id: str) -> bool:
        """Delete a finished submission's record (pending and running ones are kept)."""
        return self.submissions.delete(submission_id)

    def delete_submissions(self, *, status: SubmissionStatus | Sequence[SubmissionStatus] | None = None,
                           completed_before: datetime | float | None = None, limit: int | None = None) -> int:
        """Delete finished records (of the given statuses, finished before a time); how many."""
        before = completed_before.timestamp() if isinstance(completed_before, datetime) else completed_before
        return self.submissions.delete_many(status=status, completed_before=before, limit=limit)

    async def wait_for_submission(self, submission_id: str, *,
                                  timeout: float | None = None) -> Submission:  # noqa: ASYNC109
        """Wait until the submission has finished (`TimeoutError` after `timeout` seconds).

        Not in the original, which polls `inspectSubmission`; do not await it inside a turn of the
        same agent (the submission runs after that turn)."""
        return await self.submissions.wait(submission_id, timeout=timeout)

    async def on_submission_status(self, submission: Submission) -> None:
        """Hook: a submission was accepted, started, or finished (it may run inside its turn)."""
        return None
