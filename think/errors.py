"""Exceptions raised by think.

* ThinkError
  * ConfigurationError   the agent is set up wrong (no model, two tools with one name, bad ids)
  * ProtocolError        a client frame or message we cannot accept
    * TooDeep            a value nested past the depth limit (`think.protocol.limits`)
  * ModelError           the model provider failed; see .status and .retryable
    * ContextOverflow    the request did not fit the model's context window
  * StorageError         SQLite or a migration failed; an unknown message or session id
  * ContextError         a context block write that cannot be done (unknown label, read-only,
                         over its max_tokens); nothing is written
  * TurnError            a turn API was used where it cannot run (for example inside a turn)
  * DataDirInUse         another live process has this data directory's agents open
* ToolFailed             raised by tool code to report a failure the model should see
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ThinkError(Exception):
    """Base class of every error raised by think itself."""


class ConfigurationError(ThinkError):
    """The agent or the framework is configured in a way that cannot work."""


class ProtocolError(ThinkError):
    """Input from a client (a frame, a message) that we cannot accept."""


class ModelError(ThinkError):
    """A model provider failed."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class ContextOverflow(ModelError):
    """The request did not fit the model's context window."""


class StorageError(ThinkError):
    """SQLite or a migration failed."""


class ContextError(ThinkError):
    """A context block was read or written in a way it cannot be; nothing was changed."""


class TurnError(ThinkError):
    """A turn API was called where it cannot run."""


class DataDirInUse(ThinkError):
    """Another live process owns this data directory: one process per data directory.

    `.data_dir` is the directory, `.owner` what its lock file says about the process holding it
    (`pid`, `host`, `command`, `since`; empty if it could not be read).
    """

    def __init__(self, data_dir: Path, owner: dict[str, Any]) -> None:
        self.data_dir = data_dir
        self.owner = owner
        who = f"pid {owner.get('pid', '?')} on {owner.get('host', '?')}" if owner else "another process"
        if owner.get("command"):
            who += f" ({owner['command']})"
        if owner.get("since"):
            who += f", since {owner['since']}"
        super().__init__(
            f"the data directory {data_dir} is in use by {who}. One process serves a data directory: "
            "two would fork its conversations. Stop that process or give this one its own data directory; "
            "to run several server processes, give each its own data directory behind a proxy that sends "
            "every agent address to the same one (not `--workers N` on one directory). A runtime shared "
            "by many processes (a distributed runtime) is not built yet.")


class ToolFailed(Exception):
    """Raised by tool code to report a failure the model should see (not a crash)."""
