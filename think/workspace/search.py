"""Searching file contents: one engine behind `Workspace.search` and the `grep` tool.

It needs only `glob` and `read_file` (the `GrepOps` protocol), so it searches any storage the
tools can be pointed at. Files larger than `max_file_bytes` are skipped, and it stops after
`max_matches` matching lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from think.workspace.operations import GrepOps

MAX_MATCHES = 200
MAX_FILE_BYTES = 1_048_576
MAX_LINE_CHARS = 2000


class InvalidQuery(ValueError):
    """The query is not a valid regular expression."""


@dataclass(frozen=True, slots=True)
class SearchMatch:
    path: str
    line: int
    """1-based line number."""
    text: str
    context: tuple[str, ...] | None = None
    """With context lines: `"> N\\t…"` for the matching line, `"  N\\t…"` around it."""


@dataclass(slots=True)
class SearchResult:
    query: str
    files_searched: int = 0
    files_with_matches: int = 0
    total_matches: int = 0
    matches: list[SearchMatch] = field(default_factory=list)
    truncated: bool = False
    """True when the search stopped at `max_matches`."""
    files_skipped: int = 0
    """Files larger than `max_file_bytes`, not searched."""


def compile_query(query: str, *, fixed: bool = False, case_sensitive: bool = True) -> re.Pattern[str]:
    flags = 0 if case_sensitive else re.IGNORECASE
    try:
        return re.compile(re.escape(query) if fixed else query, flags)
    except re.error as exc:
        raise InvalidQuery(f"Invalid regex: {query} ({exc})") from exc


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "... (truncated)"


async def search_files(ops: GrepOps, query: str, *, include: str = "**/*", fixed: bool = False,
                       case_sensitive: bool = True, context_lines: int = 0, max_matches: int = MAX_MATCHES,
                       max_file_bytes: int = MAX_FILE_BYTES) -> SearchResult:
    """Lines matching `query` in the files matching `include`, in path order.

    Raises `InvalidQuery` for a bad regex. Note: Python's `re` backtracks, so a pathological
    pattern over a long line can take a long time; patterns come from the model, lines from files
    of at most `max_file_bytes`.
    """
    regex = compile_query(query, fixed=fixed, case_sensitive=case_sensitive)
    result = SearchResult(query=query)
    for info in await ops.glob(include):
        if result.total_matches >= max_matches:
            break
        if info.type != "file":
            continue
        if info.size > max_file_bytes:
            result.files_skipped += 1
            continue
        content = await ops.read_file(info.path)
        if content is None:
            continue
        result.files_searched += 1
        lines = content.split("\n")
        found = False
        for index, line in enumerate(lines):
            if result.total_matches >= max_matches:
                break
            if regex.search(line) is None:
                continue
            if not found:
                found = True
                result.files_with_matches += 1
            result.total_matches += 1
            context: tuple[str, ...] | None = None
            if context_lines > 0:
                start, end = max(0, index - context_lines), min(len(lines), index + context_lines + 1)
                context = tuple(f"{'>' if n == index else ' '} {n + 1}\t{_cut(lines[n])}" for n in range(start, end))
            result.matches.append(SearchMatch(info.path, index + 1, _cut(line), context))
    result.truncated = result.total_matches >= max_matches
    return result
