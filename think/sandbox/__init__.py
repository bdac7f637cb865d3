"""Running untrusted commands in isolation: the sandboxed `bash` tool over the workspace.

`bwrap.py` is the bubblewrap recipe (namespaces, unprivileged uid, rlimits, seccomp, timeout),
`command.py` its command line, `root.py` the directory that becomes the sandbox's `/`,
`memory.py` the memory cap of a whole run, `network.py` the optional allowlist proxy,
`seccomp.py` the system-call filter, and `bash.py` the tool: snapshot the workspace, run the
script, write the changes back.
"""

from think.sandbox.bash import BashOptions, create_bash_tool, run_bash
from think.sandbox.bwrap import Limits, RunResult, SandboxUnavailable

__all__ = ["BashOptions", "Limits", "RunResult", "SandboxUnavailable", "create_bash_tool", "run_bash"]
