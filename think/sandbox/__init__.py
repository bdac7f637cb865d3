"""Running untrusted commands in isolation: the sandboxed `bash` tool over the workspace.

`bwrap.py` is the bubblewrap recipe (namespaces, unprivileged uid, rlimits, seccomp, timeout),
`command.py` its command line, `root.py` the directory that becomes the sandbox's `/`,
`memory.py` the memory cap of a whole run, `network.py` the optional allowlist proxy,
`seccomp.py` the system-call filter, and `bash.py` the tool: snapshot the workspace, run the
script, write the changes back.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from think.sandbox.bash import BashOptions, create_bash_tool, run_bash
    from think.sandbox.bwrap import Limits, RunResult, SandboxUnavailable

# Imported on first use, so that `think.sandbox.journal` (read by every agent for its executions
# table) does not load the bubblewrap machinery.
_HOMES = {"BashOptions": "bash", "create_bash_tool": "bash", "run_bash": "bash",
          "Limits": "bwrap", "RunResult": "bwrap", "SandboxUnavailable": "bwrap"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = ["BashOptions", "Limits", "RunResult", "SandboxUnavailable", "create_bash_tool", "run_bash"]
