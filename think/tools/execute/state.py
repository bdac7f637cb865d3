"""`state.*`: the workspace's file API as host functions for the sandbox.

Paths are workspace paths (`/notes/a.md`); the guest never sees the host's filesystem. Workspace
errors reach the guest as the matching Python exception (`FileNotFoundError`, …). `plan_edits`
checks every edit against the current files first and writes nothing unless all of them apply;
then it writes them in one transaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from think.sandbox.host import HostCallRefused, HostFunction
from think.workspace.errors import (
    DirectoryNotEmpty,
    FileExists,
    FileNotFound,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    QuotaExceeded,
    WorkspaceError,
)
from think.workspace.search import InvalidQuery, QueryTooSlow, search_files
from think.workspace.workspace import Workspace

GREP_BUDGET = 0.5
"""Seconds of regex matching one `state.grep` call may use."""
GREP_MAX_FILE_BYTES = 1024 * 1024
GREP_MAX_MATCHES = 200

_ERRORS: tuple[tuple[type[Exception], str], ...] = (
    (FileNotFound, "FileNotFoundError"), (FileExists, "FileExistsError"), (IsADirectory, "IsADirectoryError"),
    (NotADirectory, "NotADirectoryError"), (DirectoryNotEmpty, "OSError"), (QuotaExceeded, "OSError"),
    (InvalidPath, "ValueError"), (InvalidQuery, "ValueError"), (WorkspaceError, "OSError"),
)

SIGNATURES = {
    "read_file": ("state.read_file(path: str) -> str | None", "the file's text; None if there is no such file"),
    "write_file": ("state.write_file(path: str, content: str) -> None", "create or replace a file"),
    "append_file": ("state.append_file(path: str, content: str) -> None", "append text to a file"),
    "list": ("state.list(path: str = '/') -> list[dict]", "a directory's entries {path, name, type, size, …}"),
    "glob": ("state.glob(pattern: str) -> list[dict]", "entries matching a pattern such as '**/*.md'"),
    "grep": ("state.grep(query: str, include: str = '**/*', fixed: bool = False) -> dict",
             "regex search: {matches: [{path, line, text}], total_matches, truncated}"),
    "stat": ("state.stat(path: str) -> dict | None", "an entry's info; None if missing"),
    "exists": ("state.exists(path: str) -> bool", ""),
    "delete": ("state.delete(path: str, recursive: bool = False) -> None", "remove a file or directory"),
    "mkdir": ("state.mkdir(path: str) -> None", "create a directory and its parents"),
    "plan_edits": ("state.plan_edits(edits: list[dict]) -> dict",
                   "atomic multi-file edit: each {path, old, new} (replace one exact occurrence) or "
                   "{path, content}; all apply or none"),
}


def state_namespace(workspace: Workspace) -> dict[str, HostFunction]:
    """The `state` namespace over `workspace`."""

    async def read_file(a: dict[str, Any]) -> Any:
        return await workspace.read_file(_str(a, "path"))

    async def write_file(a: dict[str, Any]) -> Any:
        await workspace.write_file(_str(a, "path"), _str(a, "content"))

    async def append_file(a: dict[str, Any]) -> Any:
        await workspace.append_file(_str(a, "path"), _str(a, "content"))

    async def list_(a: dict[str, Any]) -> Any:
        return [e.to_json() for e in await workspace.list(str(a.get("path") or "/"))]

    async def glob(a: dict[str, Any]) -> Any:
        return [e.to_json() for e in await workspace.glob(_str(a, "pattern"))]

    async def grep(a: dict[str, Any]) -> Any:
        return await _grep(workspace, _str(a, "query"), str(a.get("include") or "**/*"), bool(a.get("fixed", False)))

    async def stat(a: dict[str, Any]) -> Any:
        info = await workspace.stat(_str(a, "path"))
        return info.to_json() if info is not None else None

    async def exists(a: dict[str, Any]) -> Any:
        return await workspace.exists(_str(a, "path"))

    async def delete(a: dict[str, Any]) -> Any:
        await workspace.rm(_str(a, "path"), recursive=bool(a.get("recursive", False)))

    async def mkdir(a: dict[str, Any]) -> Any:
        await workspace.mkdir(_str(a, "path"), recursive=True)

    async def plan_edits(a: dict[str, Any]) -> Any:
        return await _plan_edits(workspace, a.get("edits"))

    functions: dict[str, tuple[Callable[[dict[str, Any]], Awaitable[Any]], tuple[str, ...]]] = {
        "read_file": (read_file, ("path",)), "write_file": (write_file, ("path", "content")),
        "append_file": (append_file, ("path", "content")), "list": (list_, ("path",)),
        "glob": (glob, ("pattern",)), "grep": (grep, ("query", "include", "fixed")), "stat": (stat, ("path",)),
        "exists": (exists, ("path",)), "delete": (delete, ("path", "recursive")), "mkdir": (mkdir, ("path",)),
        "plan_edits": (plan_edits, ("edits",)),
    }
    # Every call but append_file gives the same result when made twice: a crash may repeat it.
    return {name: HostFunction(_translated(fn), params, description=SIGNATURES[name][1], rerun=name != "append_file")
            for name, (fn, params) in functions.items()}


async def _plan_edits(workspace: Workspace, edits: Any) -> dict[str, Any]:
    if not isinstance(edits, list) or not edits:
        raise HostCallRefused("edits must be a non-empty list of {path, old, new} or {path, content}", "TypeError")
    contents: dict[str, str] = {}
    for number, edit in enumerate(edits, 1):
        if not isinstance(edit, dict) or not isinstance(edit.get("path"), str):
            raise HostCallRefused(f"edit {number}: needs a 'path'", "TypeError")
        path = edit["path"]
        if "content" in edit:
            contents[path] = _str(edit, "content")
            continue
        old, new = _str(edit, "old"), _str(edit, "new")
        current = contents[path] if path in contents else await workspace.read_file(path)
        if current is None:
            raise HostCallRefused(f"edit {number}: no such file: {path} (nothing was changed)", "FileNotFoundError")
        count = current.count(old) if old else 0
        if count != 1:
            what = "not found" if count == 0 else f"found {count} times"
            raise HostCallRefused(f"edit {number}: the old text is {what} in {path} (nothing was changed)",
                                  "ValueError")
        contents[path] = current.replace(old, new, 1)
    result = await workspace.apply(writes={p: c.encode() for p, c in contents.items()})
    if result.errors:
        raise HostCallRefused("; ".join(result.errors), "OSError")
    return {"changed": sorted(contents), "edits": len(edits)}


async def _grep(workspace: Workspace, query: str, include: str, fixed: bool) -> dict[str, Any]:
    """Lines matching `query`, through the workspace's one search engine: the guest's pattern runs
    with a time budget (a catastrophic backtracking pattern is stopped), never unbounded on the host."""
    try:
        found = await search_files(workspace, query, include=include, fixed=fixed, max_matches=GREP_MAX_MATCHES,
                                   max_file_bytes=GREP_MAX_FILE_BYTES, budget=GREP_BUDGET)
    except QueryTooSlow as exc:
        raise HostCallRefused(f"the pattern took longer than {GREP_BUDGET:g} s", "TimeoutError") from exc
    except InvalidQuery as exc:
        raise HostCallRefused(f"invalid regex: {exc}", "ValueError") from exc
    matches = [{"path": m.path, "line": m.line, "text": m.text[:500]} for m in found.matches]
    return {"matches": matches, "total_matches": found.total_matches, "truncated": found.truncated}


def _str(a: dict[str, Any], key: str) -> str:
    value = a.get(key)
    if not isinstance(value, str):
        raise HostCallRefused(f"{key!r} must be a string", "TypeError")
    return value


def _translated(fn: Callable[[dict[str, Any]], Awaitable[Any]]) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    async def call(a: dict[str, Any]) -> Any:
        try:
            return await fn(a)
        except WorkspaceError as exc:
            kind = next(name for cls, name in _ERRORS if isinstance(exc, cls))
            raise HostCallRefused(str(exc), kind) from exc
        except InvalidQuery as exc:
            raise HostCallRefused(str(exc), "ValueError") from exc

    return call
