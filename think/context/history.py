"""`ModelHistory`: the model's view of a session, converted incrementally.

Converting a whole transcript before every model call would make a turn's cost grow with the
conversation. Older messages are converted once (truncated) and kept; only the recent window and
new messages are converted per turn. The cutoff between the two moves only every
`truncation_step` messages, so what the model sees of older messages stays byte-identical
between moves and a provider's prompt cache keeps hitting. Any change to stored messages other than an append bumps
the session's `version`, which throws the cache away. The model sees `Session.model_view()`: the
hydrated window with the compaction in effect laid over it. One cache per session.
"""

from __future__ import annotations

from think.context.convert import TRUNCATION_STEP, convert_messages, truncation_boundary
from think.models.base import ModelMessage
from think.sessions.session import Session
from think.workspace.attachments import has_workspace_file


class _Converted:
    def __init__(self, version: int) -> None:
        self.version = version
        self.old: list[ModelMessage] = []
        self.old_system: list[str] = []
        self.old_count = 0
        self.with_files: list[int] = []  # the indexes in `old` of messages with a workspace file


class ModelHistory:
    def __init__(self, truncation_step: int = TRUNCATION_STEP) -> None:
        self._caches: dict[str, tuple[Session, _Converted]] = {}
        self.truncation_step = truncation_step
        """The truncation cutoff moves by this many messages at once (see `truncation_boundary`)."""

    def build(self, session: Session) -> tuple[list[ModelMessage], str]:
        """The model messages for the session's view (see the module docstring), and any system
        text in it."""
        path = session.model_view()
        boundary = truncation_boundary(len(path), self.truncation_step)
        cached = self._caches.get(session.id)
        cache = cached[1] if cached is not None and cached[0] is session else None
        if cache is None or cache.version != session.version or cache.old_count > boundary:
            cache = _Converted(session.version)
            self._caches[session.id] = (session, cache)
        if cache.old_count < boundary:
            converted, system = convert_messages(path[cache.old_count:boundary], truncate=True)
            cache.with_files += [i for i, m in enumerate(converted, len(cache.old)) if has_workspace_file(m)]
            cache.old.extend(converted)
            cache.old_system.extend(system)
            cache.old_count = boundary
        recent, recent_system = convert_messages(path[boundary:], truncate=False)
        system_text = "\n\n".join(s for s in cache.old_system + recent_system if s)
        return cache.old + recent, system_text

    def clear(self) -> None:
        """Drop every converted history (the next `build` converts again)."""
        self._caches.clear()

    def scanned(self, session: Session) -> tuple[int, tuple[int, ...]]:
        """Of the messages `build(session)` returned last: how many, from the first, were looked
        at for workspace files when they were converted (once), and the indexes of those that
        have one (`resolve_for_model` needs to look at no other of them)."""
        cached = self._caches.get(session.id)
        if cached is None or cached[0] is not session:
            return 0, ()
        return len(cached[1].old), tuple(cached[1].with_files)
