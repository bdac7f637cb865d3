"""`WorkspaceFeed`: an agent's workspace changes, broadcast to its connections.

    {"type":"think_workspace_change","changes":[{"kind":"create","path":"/notes","entryType":"directory"},
                                                {"kind":"create","path":"/notes/a.md","entryType":"file"}]}

The frame is ours (the original protocol has none); the stock clients pass it to `onMessage`.
Every committed change counts, whoever made it: a file tool, `bash` writing back its sandbox, or
code calling `self.workspace`.

Changes are not sent from inside the task that makes them: a workspace listener runs in that
task (a turn's tool call, say), and `bash` can write back a thousand files at once. They are
queued, and a task of the agent's host sends them `FLUSH_DELAY` seconds after the first one, as
few frames as the burst needs (at most `MAX_CHANGES_PER_FRAME` changes each).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio

from think.protocol.codec import encode_frame
from think.protocol.frames import FileChange, WorkspaceChanged
from think.server.chat import Spawn
from think.server.connection import Connections
from think.workspace.workspace import Workspace, WorkspaceChange

log = logging.getLogger("think.server")

FLUSH_DELAY = 0.05
"""Seconds between the first change of a burst and the frame that reports the burst."""
MAX_CHANGES_PER_FRAME = 500


class WorkspaceFeed:
    """Reports one workspace's changes to one agent's connections (see the module docstring)."""

    def __init__(self, workspace: Workspace, connections: Connections, spawn: Spawn, *,
                 delay: float = FLUSH_DELAY) -> None:
        self.workspace = workspace
        self.connections = connections
        self.spawn = spawn
        self.delay = delay
        self._pending: list[FileChange] = []
        self._last: dict[str, int] = {}
        """Path → index in `_pending` of its newest change."""
        self._scheduled = False
        self._unsubscribe: Callable[[], None] | None = None

    def open(self) -> None:
        self._unsubscribe = self.workspace.on_change(self._on_change)

    def close(self) -> None:
        """Stop listening; changes still queued are sent now."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.flush()

    def _on_change(self, change: WorkspaceChange) -> None:
        if not len(self.connections):
            return  # nobody to tell; a socket that connects later lists the workspace itself
        entry = FileChange(change.kind, change.path, change.entry_type)
        index = self._last.get(entry.path)
        if index is not None:
            newest = self._pending[index]
            # A file written twice in a burst is one change; a new file written again is still new.
            if newest == entry or (entry.kind == "update" and newest.kind == "create"
                                   and newest.entry_type == entry.entry_type):
                return
        self._last[entry.path] = len(self._pending)
        self._pending.append(entry)
        if not self._scheduled:
            self._scheduled = True
            self.spawn(self._flush_soon)

    async def _flush_soon(self) -> None:
        try:
            await anyio.sleep(self.delay)
        finally:
            self._scheduled = False
            self.flush()

    def flush(self) -> None:
        """Send the queued changes now."""
        pending, self._pending = self._pending, []
        self._last.clear()
        for start in range(0, len(pending), MAX_CHANGES_PER_FRAME):
            batch = tuple(pending[start:start + MAX_CHANGES_PER_FRAME])
            self.connections.broadcast(encode_frame(WorkspaceChanged(batch)))
