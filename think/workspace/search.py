"""Searching file contents: one engine behind `Workspace.search` and the `grep` tool.

It needs only `glob` and `read_file` (the `GrepOps` protocol), so it searches any storage the
tools can be pointed at. Files larger than `max_file_bytes` are skipped, and it stops after
`max_matches` matching lines. Patterns come from the model: they run on the `regex` engine with a
time budget for the whole search, so a catastrophically backtracking one is stopped
(`QueryTooSlow`) instead of blocking the agent's event loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from think.workspace.operations import GrepOps

if TYPE_CHECKING:
    import regex

MAX_MATCHES = 200
MAX_FILE_BYTES = 1_048_576
MAX_LINE_CHARS = 2000
MATCH_BUDGET = 1.0
"""Seconds of pattern matching one search may spend."""


class InvalidQuery(ValueError):
    """The query is not a valid regular expression."""


class QueryTooSlow(InvalidQuery):
    """The pattern used up the search's time budget (catastrophic backtracking, most often)."""


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


def compile_query(query: str, *, fixed: bool = False, case_sensitive: bool = True) -> regex.Pattern[str]:
    import regex  # ~15 ms: loaded by the first search, not by `import think`

    flags = 0 if case_sensitive else regex.IGNORECASE
    try:
        return regex.compile(regex.escape(query) if fixed else query, flags)
    except regex.error as exc:
        raise InvalidQuery(f"Invalid regex: {query} ({exc})") from exc


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "... (truncated)"


async def search_files(ops: GrepOps, query: str, *, include: str = "**/*", fixed: bool = False,
                       case_sensitive: bool = True, context_lines: int = 0, max_matches: int = MAX_MATCHES,
                       max_file_bytes: int = MAX_FILE_BYTES, budget: float = MATCH_BUDGET) -> SearchResult:
    """Lines matching `query` in the files matching `include`, in path order.

    Raises `InvalidQuery` for a bad regex, and `QueryTooSlow` when matching takes more than
    `budget` seconds in all.
    """
    pattern = compile_query(query, fixed=fixed, case_sensitive=case_sensitive)
    deadline = time.monotonic() + budget
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
            try:
                hit = pattern.search(line, timeout=max(0.001, deadline - time.monotonic()))
            except TimeoutError:
                raise QueryTooSlow(f"the pattern {query!r} took longer than {budget:g} s to match: "
                                   "use a simpler one (or fixedString)") from None
            if hit is None:
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
