"""`SandboxScriptRunner`: skill scripts run under `think.sandbox` (bubblewrap, no network).

Each run gets a fresh root holding the skill's files under `/skill` (the working directory) and
the input at `/input.json`, fed to the script's standard input. Python runs with the system's
`python3`, JavaScript with `node`, shell scripts with `bash`; nothing the script writes survives.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

import orjson

from think.skills.library import SkillScript, SkillScriptResult

INTERPRETERS: Mapping[str, str] = {"python": "python3", "bash": "bash", "javascript": "node"}


@dataclass(frozen=True, kw_only=True)
class SandboxScriptRunner:
    """A `SkillScriptRunner` over `think.sandbox`. Raises `SandboxUnavailable` where bubblewrap
    cannot run (the tool reports it to the model as a failed script)."""

    memory_bytes: int = 1024 * 1024 * 1024
    max_output_bytes: int = 64_000
    disk_bytes: int = 64 * 1024 * 1024
    """Room for files the script writes (on top of the skill's own)."""

    async def run(self, script: SkillScript) -> SkillScriptResult:
        from think.sandbox.bwrap import Limits, run_script, sandbox_root

        interpreter = INTERPRETERS.get(script.language)
        if interpreter is None:
            return SkillScriptResult(exit_code=127, stdout="",
                                     stderr=f"{script.language} scripts cannot run in the sandbox "
                                            f"(it runs {', '.join(INTERPRETERS)})")
        files = {f"/skill/{path}": data for path, data in script.files.items()}
        files["/input.json"] = orjson.dumps(script.input)
        directories = sorted({str(d) for path in files for d in PurePosixPath(path).parents if str(d) != "/"},
                             key=len)  # parents first
        size = sum(len(data) for data in files.values())
        limits = Limits(timeout=script.timeout, max_output_bytes=self.max_output_bytes,
                        max_file_bytes=max(1_048_576, max(map(len, files.values()))), memory_bytes=self.memory_bytes,
                        disk_bytes=size + self.disk_bytes, max_inodes=len(files) + len(directories) + 1_000)
        command = f"exec {interpreter} {shlex.quote(script.path)} < /input.json"
        async with sandbox_root(disk_bytes=limits.disk_bytes, max_inodes=limits.max_inodes) as root:
            for directory in directories:
                root.add_dir(directory)
            for path, data in files.items():
                root.add_file(path, data)
            result = await run_script(root, command, cwd="/skill", limits=limits)
        stdout = result.stdout.decode("utf-8", "replace")
        stderr = result.stderr.decode("utf-8", "replace")
        if result.stdout_dropped:
            stdout += f"\n[{result.stdout_dropped} more bytes of output dropped]"
        return SkillScriptResult(exit_code=result.exit_code, stdout=stdout, stderr=stderr, timed_out=result.timed_out)


def sandbox_runner_if_available() -> SandboxScriptRunner | None:
    """A `SandboxScriptRunner` when bubblewrap and its helpers are installed here, else None."""
    try:
        from think.sandbox.bwrap import SandboxUnavailable, find_tools
    except ImportError:
        return None
    try:
        find_tools()
    except SandboxUnavailable:
        return None
    return SandboxScriptRunner()
