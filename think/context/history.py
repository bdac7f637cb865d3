"""`ModelHistory`: the model's view of a session, converted incrementally.

Converting a whole transcript before every model call would make a turn's cost grow with the
conversation. Older messages are converted once (truncated) and kept; only the recent window and
new messages are converted per turn. Any change to stored messages other than an append bumps
the session's `version`, which throws the cache away.
"""

from __future__ import annotations

from think.context.convert import RECENT_MESSAGES_KEPT_WHOLE, convert_messages
from think.models.base import ModelMessage
from think.sessions.session import Session


class ModelHistory:
    def __init__(self) -> None:
        self._key: tuple[int, int] | None = None
        self._old: list[ModelMessage] = []
        self._old_system: list[str] = []
        self._old_count = 0

    def build(self, session: Session) -> tuple[list[ModelMessage], str]:
        """The model messages for the session's active path, and any system text in it."""
        path = session.history()
        boundary = max(0, len(path) - RECENT_MESSAGES_KEPT_WHOLE)
        key = (id(session), session.version)
        if key != self._key or self._old_count > boundary:
            self._key, self._old, self._old_system, self._old_count = key, [], [], 0
        if self._old_count < boundary:
            converted, system = convert_messages(path[self._old_count:boundary], truncate=True)
            self._old.extend(converted)
            self._old_system.extend(system)
            self._old_count = boundary
        recent, recent_system = convert_messages(path[boundary:], truncate=False)
        system_text = "\n\n".join(s for s in self._old_system + recent_system if s)
        return self._old + recent, system_text
