"""The `bash` tool: a real bash, sandboxed, over a snapshot of the workspace mounted at `/`.

One run: snapshot the workspace into a fresh root directory (at most `max_workspace_files` files,
none larger than `max_workspace_file_bytes`; the rest are *skipped*: not mounted, listed in the
result and protected from being overwritten or deleted), run the script under bubblewrap
(`think.sandbox.bwrap`), then write back what changed: created, updated and deleted files, and
created and deleted directories. Symlinks, devices and pipes are never written back; neither is
anything under the sandbox's own `/bin /dev /lib /lib64 /proc /sbin /sys /tmp /usr`.

The result follows the original: `{stdout, stderr, exitCode, changedFiles: {created, updated,
deleted, directoriesCreated, directoriesDeleted}, skippedFiles?, errors?}`; a timeout is exit
code 124, and each output stream is capped at `max_output_bytes` with a truncation note.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from think.sandbox import memory
from think.sandbox.bwrap import (
    MAX_SCRIPT_CHARS,
    Limits,
    RunResult,
    SandboxUnavailable,
    find_tools,
    run_script,
    sandbox_root,
)
from think.sandbox.network import parse_allowlist
from think.sandbox.root import RESERVED_ROOTS, SandboxRoot
from think.tools.tool import Tool, tool
from think.workspace.errors import InvalidPath
from think.workspace.media import format_size
from think.workspace.operations import FileInfo
from think.workspace.paths import is_within, normalize_path
from think.workspace.workspace import Workspace, WorkspaceChange

log = logging.getLogger("think.sandbox")

_Baseline = dict[str, tuple[tuple[int, int, int], bytes]]
MAX_ERRORS_LISTED = 50


@dataclass(frozen=True, kw_only=True)
class BashOptions:
    """Limits of the `bash` tool (`Think.workspace_bash = BashOptions(...)`)."""

    timeout: float = 30.0
    """Seconds before the script is killed (exit code 124)."""
    network: Sequence[str] = ()
    """Allowlisted hosts or URLs (see `think.sandbox.network`); empty means no network at all."""
    max_workspace_files: int = 1000
    """Files mounted into the sandbox, and most files the workspace may hold after a run."""
    max_workspace_file_bytes: int = 1_048_576
    """Larger files are not mounted (and protected); the sandbox cannot create larger ones."""
    max_output_bytes: int = 64_000
    """Per stream (stdout, stderr)."""
    memory_bytes: int = 1024 * 1024 * 1024
    """Address space per process."""
    run_memory_bytes: int = 1024 * 1024 * 1024
    """Memory of one run, all its processes together: a cgroup limit where this machine lets us
    make one, else an rlimit budget (`think.sandbox.memory`; the tool's description says which)."""
    memory_mode: Literal["auto", "budget"] = "auto"
    """"budget": the rlimit budget even where a cgroup could be made."""
    max_processes: int = 128
    disk_bytes: int = 64 * 1024 * 1024
    """Room for new data in the sandbox, on top of the snapshot."""

    def __post_init__(self) -> None:
        parse_allowlist(self.network)  # fail at configuration time, not on the model's first call


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _populate(root: SandboxRoot, directories: Sequence[FileInfo],
              files: Sequence[tuple[FileInfo, bytes]]) -> tuple[_Baseline, set[str]]:
    """Write the snapshot; returns the baseline and the paths that could not be mounted (a path
    too long for the host once the root's own path is in front of it): those stay protected."""
    baseline: _Baseline = {}
    failed: set[str] = set()
    for info in directories:
        try:
            root.add_dir(info.path)
        except OSError:
            failed.add(info.path)
    for info, data in files:
        try:
            baseline[info.path] = (root.add_file(info.path, data), _digest(data))
        except OSError:
            failed.add(info.path)
    return baseline, failed


@dataclass
class _After:
    directories: set[str]
    writes: dict[str, bytes]
    present_files: set[str]
    errors: list[str]
    unreadable: list[str]
    """Directories that could not be listed: nothing below them is written back or deleted."""


def _collect(root: SandboxRoot, baseline: _Baseline, skipped: set[str], max_files: int,
             max_file_bytes: int) -> _After:
    directories: set[str] = set()
    candidates: list[tuple[str, os.stat_result]] = []
    errors: list[str] = []
    present: set[str] = set()
    unreadable: list[str] = []
    for path, st in root.walk(unreadable):
        try:
            normalize_path(path)
        except InvalidPath as exc:  # not UTF-8, or nested deeper than a workspace path may be
            shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            errors.append(f"{shown[:200]}: not written back ({exc})")
            continue
        if stat.S_ISDIR(st.st_mode):
            directories.add(path)
        elif stat.S_ISREG(st.st_mode):
            present.add(path)
            candidates.append((path, st))
        else:
            kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            errors.append(f"{path}: not written back, it is {kind}")
    errors += [f"{path}: could not be read after the run; nothing in it was written back" for path in unreadable]
    writes: dict[str, bytes] = {}
    file_count = 0
    for path, st in sorted(candidates):
        if path in skipped:
            errors.append(f"{path}: not written back, the workspace file there was not mounted (protected)")
            continue
        file_count += 1
        if file_count > max_files:
            errors.append(f"{path}: not written back, over the {max_files}-file limit")
            present.discard(path)
            continue
        known = baseline.get(path)
        if known is not None and known[0] == (st.st_size, st.st_mtime_ns, st.st_ino):
            continue  # untouched since the snapshot
        data = None if st.st_size > max_file_bytes else root.read_file(path, max_file_bytes)
        if data is None:
            why = f"larger than {format_size(max_file_bytes)}" if st.st_size > max_file_bytes else "it cannot be read"
            errors.append(f"{path}: not written back, {why}")
            continue
        if known is None or known[1] != _digest(data):
            writes[path] = data
    return _After(directories, writes, present, errors, unreadable)


def _decode(data: bytes, dropped: int) -> str:
    text = data.decode("utf-8", "replace")
    return text + f"\n... ({format_size(dropped)} truncated)" if dropped else text


async def run_bash(workspace: Workspace, script: str, *, cwd: str = "/",
                   options: BashOptions | None = None) -> dict[str, Any]:
    """Run `script` over a snapshot of `workspace` and write the changes back; the tool's output."""
    options = options or BashOptions()
    if len(script) > MAX_SCRIPT_CHARS:
        return {"error": f"The script is {len(script)} characters long; the limit is {MAX_SCRIPT_CHARS}. "
                         "Write long programs to a file with the write tool, then run that file."}
    try:
        directory = normalize_path(cwd or "/")
        find_tools()
    except SandboxUnavailable as exc:
        return {"error": f"bash is not available here: {exc}"}
    except ValueError as exc:
        return {"error": str(exc)}
    top = directory.split("/")[1]
    info = await workspace.stat(directory)
    if top not in RESERVED_ROOTS and (info is None or info.type != "directory"):
        return {"error": f"Directory not found: {directory}"}

    directories, files, skipped = await workspace.export(
        max_files=options.max_workspace_files, max_file_bytes=options.max_workspace_file_bytes,
        exclude_roots=RESERVED_ROOTS)
    snapshot_dirs = {d.path for d in directories}
    skipped_paths = {s.path for s in skipped}
    limits = Limits(timeout=options.timeout, max_output_bytes=options.max_output_bytes,
                    max_file_bytes=options.max_workspace_file_bytes, memory_bytes=options.memory_bytes,
                    run_memory_bytes=options.run_memory_bytes, memory_mode=options.memory_mode,
                    max_processes=options.max_processes,
                    disk_bytes=sum(len(data) for _, data in files) + options.disk_bytes,
                    max_inodes=len(directories) + options.max_workspace_files + 128)
    try:
        async with sandbox_root(disk_bytes=limits.disk_bytes, max_inodes=limits.max_inodes) as root:
            baseline, failed = await anyio.to_thread.run_sync(_populate, root, directories, files)
            snapshot_dirs -= failed
            skipped_paths |= failed
            skipped += [f for f, _ in files if f.path in failed]
            result: RunResult = await run_script(root, script, cwd=directory, limits=limits,
                                                 network=parse_allowlist(options.network))
            after = await anyio.to_thread.run_sync(_collect, root, baseline, skipped_paths,
                                                   options.max_workspace_files, options.max_workspace_file_bytes)
    except SandboxUnavailable as exc:
        return {"error": f"bash is not available here: {exc}"}

    def gone(path: str) -> bool:
        return not any(is_within(path, d) for d in after.unreadable)

    deleted_files = [p for p in baseline if p not in after.present_files and gone(p)]
    deleted_dirs = [d for d in snapshot_dirs if d not in after.directories and gone(d)]
    new_dirs = [d for d in after.directories if d not in snapshot_dirs and d not in skipped_paths]
    batch = await workspace.apply(writes=after.writes, mkdirs=new_dirs, deletes=deleted_files + deleted_dirs)

    stderr = _decode(result.stderr, result.stderr_dropped)
    if result.timed_out:
        stderr = _note(stderr, f"bash: killed after the {options.timeout:g} s time limit (exit code 124)")
    if result.oom_kills:
        stderr = _note(stderr, f"bash: out of memory: the run's processes together reached the "
                               f"{format_size(options.run_memory_bytes)} memory limit, and "
                               + ("1 process was" if result.oom_kills == 1 else f"{result.oom_kills} processes were")
                               + " killed")
    output: dict[str, Any] = {
        "stdout": _decode(result.stdout, result.stdout_dropped),
        "stderr": stderr,
        "exitCode": result.exit_code,
        "changedFiles": _changed(batch.changes),
    }
    if skipped:
        output["skippedFiles"] = [s.path for s in skipped]
        output["note"] = (f"{len(skipped)} workspace file(s) were not mounted (larger than "
                          f"{format_size(options.max_workspace_file_bytes)}, or over the "
                          f"{options.max_workspace_files}-file limit); they are left unchanged.")
    errors = after.errors + batch.errors
    if len(errors) > MAX_ERRORS_LISTED:
        errors = [*errors[:MAX_ERRORS_LISTED], f"... and {len(errors) - MAX_ERRORS_LISTED} more"]
    if errors:
        output["errors"] = errors
    return output


def _note(stderr: str, line: str) -> str:
    return stderr + ("" if not stderr or stderr.endswith("\n") else "\n") + line


def _changed(changes: Sequence[WorkspaceChange]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"created": [], "updated": [], "deleted": [], "directoriesCreated": [],
                                 "directoriesDeleted": []}
    for change in changes:
        if change.entry_type == "file":
            out[{"create": "created", "update": "updated", "delete": "deleted"}[change.kind]].append(change.path)
        elif change.kind == "create":
            out["directoriesCreated"].append(change.path)
        elif change.kind == "delete":
            out["directoriesDeleted"].append(change.path)
    return {key: sorted(value) for key, value in out.items()}


def create_bash_tool(workspace: Workspace, options: BashOptions | None = None) -> Tool:
    """The `bash` tool over `workspace`."""
    options = options or BashOptions()
    network = "no network access" if not options.network else "network access only to an allowlist"
    plan = memory.plan(options.run_memory_bytes, options.memory_bytes, options.max_processes,
                       Limits().budget_processes, mode=options.memory_mode)

    @tool(name="bash", description=(
        "Run a bash script in a sandbox whose / is a snapshot of the workspace; files you create, change "
        "or delete are written back to the workspace. Paths are absolute, starting at / (the workspace "
        "root); there is no /workspace or /home. Standard Linux tools are available (coreutils, grep, sed, "
        f"awk, python3…), with {network}, a {options.timeout:g} s time limit, and files of at most "
        f"{format_size(options.max_workspace_file_bytes)} ({options.max_workspace_files} files at most); "
        f"{plan.describe()}. /tmp is scratch space and is not kept."))
    async def bash(script: str, cwd: str = "/") -> dict[str, Any]:
        """
        Args:
            script: The bash script to run.
            cwd: Absolute path of the directory to run it in (default: /).
        """
        return await run_bash(workspace, script, cwd=cwd, options=options)

    return bash
