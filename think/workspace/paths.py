"""Workspace paths: absolute, normalized, never above `/`; and globs over them.

Every path a workspace sees goes through `normalize_path` first, so `../../etc/passwd` is the
workspace file `/etc/passwd` and nothing on the host. Paths are plain strings with `/` separators.
"""

from __future__ import annotations

import re
from functools import lru_cache

from think.workspace.errors import InvalidPath

MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255
"""Longest file name, as in most Linux filesystems (the bash sandbox writes real files)."""


def normalize_path(path: str) -> str:
    """`path` as an absolute workspace path: `.`, `..` and repeated slashes resolved.

    `..` at the root stays at the root, as in a shell. Raises `InvalidPath` for NUL bytes, names
    longer than 255 bytes and paths longer than 4096 characters.
    """
    if not isinstance(path, str):
        raise InvalidPath(f"EINVAL: a path must be a string, not {type(path).__name__}", path=repr(path))
    if "\x00" in path:
        raise InvalidPath("EINVAL: a path cannot contain NUL bytes", path=path.replace("\x00", "\\0"))
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        try:
            size = len(part.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidPath("EINVAL: a path must be valid UTF-8",
                              path=path.encode("utf-8", "replace").decode()) from None
        if size > MAX_NAME_BYTES:
            raise InvalidPath(f"ENAMETOOLONG: a name in {path[:80]!r}… is longer than {MAX_NAME_BYTES} bytes",
                              path=path[:200])
        parts.append(part)
    result = "/" + "/".join(parts)
    if len(result) > MAX_PATH_CHARS:
        raise InvalidPath(f"ENAMETOOLONG: path exceeds {MAX_PATH_CHARS} characters", path=result[:200])
    return result


def parent_of(path: str) -> str:
    """The parent of a normalized path; `""` for the root."""
    if path == "/":
        return ""
    cut = path.rfind("/")
    return "/" if cut == 0 else path[:cut]


def name_of(path: str) -> str:
    return "" if path == "/" else path[path.rfind("/") + 1 :]


def join(directory: str, name: str) -> str:
    return f"/{name}" if directory == "/" else f"{directory}/{name}"


def is_within(path: str, directory: str) -> bool:
    """True if `path` is `directory` or below it (both normalized)."""
    return directory == "/" or path == directory or path.startswith(directory + "/")


def descendants_range(directory: str) -> tuple[str, str]:
    """`(low, high)` so that `low <= p < high` holds exactly for paths strictly below `directory`.

    `"0"` is the character after `"/"`, so the range is one index scan on the path column.
    """
    if directory == "/":
        return "/", "0"
    return directory + "/", directory + "0"


# ---- globs --------------------------------------------------------------------------------------


def glob_prefix(pattern: str) -> str:
    """The longest directory prefix of a normalized pattern before its first wildcard.

    Ends with `/` when the pattern has wildcards; is the whole pattern when it has none.
    """
    first = re.search(r"[*?\[{]", pattern)
    if first is None:
        return pattern
    before = pattern[: first.start()]
    return before[: before.rfind("/") + 1] or "/"


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a normalized glob: `*` and `?` stay within a segment, `**` crosses them,
    `[abc]` is a class and `{a,b}` an alternation."""
    out = ["^"]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            if i + 1 < n and pattern[i + 1] == "*":
                i += 2
                if i < n and pattern[i] == "/":
                    out.append("(?:.+/)?")
                    i += 1
                else:
                    out.append(".*")
            else:
                out.append("[^/]*")
                i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            close = pattern.find("]", i + 2)
            if close == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                body = pattern[i + 1 : close]
                negate = body.startswith(("!", "^"))
                body = body[1:] if negate else body
                out.append(("[^" if negate else "[") + body.replace("\\", "\\\\") + "]")
                i = close + 1
        elif ch == "{":
            close = pattern.find("}", i + 1)
            if close == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                options = pattern[i + 1 : close].split(",")
                out.append("(?:" + "|".join(_segment_regex(o) for o in options) + ")")
                i = close + 1
        else:
            out.append(re.escape(ch))
            i += 1
    out.append("$")
    try:
        return re.compile("".join(out))
    except re.error as exc:
        raise InvalidPath(f"EINVAL: invalid glob pattern {pattern!r}: {exc}", path=pattern) from exc


def _segment_regex(text: str) -> str:
    """An alternative inside `{…}`: wildcards allowed, nested braces taken literally."""
    return glob_regex(text).pattern[1:-1] if text else ""


def normalize_pattern(pattern: str) -> str:
    """A glob made absolute: a relative pattern such as `*.md` matches from the root."""
    if not pattern or pattern.strip() == "":
        raise InvalidPath("EINVAL: empty glob pattern", path=pattern)
    return normalize_path(pattern)
