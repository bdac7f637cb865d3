"""Running untrusted commands in isolation: the sandboxed `bash` tool over the workspace.

`bwrap.py` is the bubblewrap recipe (namespaces, unprivileged uid, rlimits, seccomp, timeout),
`command.py` its command line, `root.py` the directory that becomes the sandbox's `/`,
`memory.py` the memory cap of a whole run, `network.py` the optional allowlist proxy,
`seccomp.py` the system-call filter, and `bash.py` the tool: snapshot the workspace, run the
script, write the changes back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from think._lazy import lazy_exports

if TYPE_CHECKING:
    from think.sandbox.bash import BashOptions, create_bash_tool, run_bash
    from think.sandbox.bwrap import Limits, RunResult, SandboxUnavailable

# Imported on first use, so that `think.sandbox.journal` (read by every agent for its executions
# table) does not load the bubblewrap machinery.
_HOMES = {"BashOptions": "think.sandbox.bash", "create_bash_tool": "think.sandbox.bash",
          "run_bash": "think.sandbox.bash", "Limits": "think.sandbox.bwrap", "RunResult": "think.sandbox.bwrap",
          "SandboxUnavailable": "think.sandbox.bwrap"}
__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())


__all__ = ["BashOptions", "Limits", "RunResult", "SandboxUnavailable", "create_bash_tool", "run_bash"]
