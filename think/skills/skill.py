"""Skills: named instructions with bundled resources and scripts, loaded on demand by the model.

A skill is a folder with a `SKILL.md` (YAML front matter with `name` and `description`, then the
instructions in Markdown) and any other files: resources the model can read, and scripts under
`scripts/` it can run through a runner. Or it is defined in code:

    Skill(name="release-notes", description="Write release notes from a list of merged changes.",
          instructions="1. Group changes by area …", resources={"template.md": "# Release {version}"})

`Think.get_skills()` returns skills, folders (a folder of skill folders, or one skill folder) and
other sources; the first skill of a name wins. A malformed skill raises `ConfigurationError`
naming the file and what is wrong with it.
"""

from __future__ import annotations

import mimetypes
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from think.errors import ConfigurationError

SKILL_FILE = "SKILL.md"
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
SCRIPT_LANGUAGES = {".py": "python", ".sh": "bash", ".bash": "bash", ".js": "javascript", ".mjs": "javascript",
                    ".ts": "typescript"}
_SKIPPED = {"__pycache__", "node_modules"}
FileContent: TypeAlias = str | bytes | Path
"""A file's content: text, bytes, or a path read when the file is used."""


@dataclass(frozen=True)
class SkillFile:
    """A file bundled with a skill, by its path relative to the skill."""

    path: str
    kind: Literal["resource", "script"]
    content: FileContent = field(repr=False)

    def read(self) -> bytes:
        if isinstance(self.content, Path):
            return self.content.read_bytes()
        return self.content.encode() if isinstance(self.content, str) else self.content

    @property
    def size(self) -> int:
        if isinstance(self.content, Path):
            return self.content.stat().st_size
        return len(self.read())

    @property
    def mime_type(self) -> str:
        return mimetypes.guess_type(self.path)[0] or ("text/markdown" if self.path.endswith(".md") else
                                                      "text/plain" if self.encoding == "utf8" else
                                                      "application/octet-stream")

    @property
    def encoding(self) -> Literal["utf8", "base64"]:
        try:
            self.read().decode("utf-8")
        except UnicodeDecodeError:
            return "base64"
        return "utf8"

    @property
    def language(self) -> str | None:
        return SCRIPT_LANGUAGES.get(os.path.splitext(self.path)[1])


@dataclass(frozen=True, kw_only=True)
class Skill:
    """One skill. `resources` and `scripts` map relative paths to contents."""

    name: str
    description: str
    instructions: str
    resources: Mapping[str, FileContent] = field(default_factory=dict)
    scripts: Mapping[str, FileContent] = field(default_factory=dict)
    version: str | None = None
    origin: str = "code"
    """Where the skill came from (a path), for error messages."""

    def __post_init__(self) -> None:
        where = f"skill {self.name!r} ({self.origin})"
        if not isinstance(self.name, str) or not _NAME.match(self.name) or len(self.name) > MAX_NAME:
            raise ConfigurationError(f"{where}: the name must be 1-{MAX_NAME} lowercase letters, digits and "
                                     "single hyphens, such as 'pdf-tools'")
        if not isinstance(self.description, str) or not self.description.strip():
            raise ConfigurationError(f"{where}: a description is required (it tells the model when to use it)")
        if len(self.description) > MAX_DESCRIPTION:
            raise ConfigurationError(f"{where}: the description is {len(self.description)} characters; "
                                     f"the limit is {MAX_DESCRIPTION}")
        for path in [*self.resources, *self.scripts]:
            if not is_safe_path(path):
                raise ConfigurationError(f"{where}: file path {path!r} must be relative, without '..'")

    def files(self) -> list[SkillFile]:
        """Resources, then scripts (a script path under `scripts/` also counts as a script)."""
        out = [SkillFile(p, "script" if p.startswith("scripts/") and SCRIPT_LANGUAGES.get(os.path.splitext(p)[1])
                         else "resource", c) for p, c in self.resources.items()]
        out += [SkillFile(p, "script", c) for p, c in self.scripts.items() if p not in self.resources]
        return out

    def file(self, path: str) -> SkillFile | None:
        return next((f for f in self.files() if f.path == path), None)


@runtime_checkable
class SkillSource(Protocol):
    """Anything that lists skills."""

    def load_skills(self) -> Sequence[Skill]: ...


SkillSources: TypeAlias = Iterable["Skill | SkillSource | str | os.PathLike[str]"]


def is_safe_path(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    return bool(path) and not path.startswith(("/", "\\")) and ".." not in parts and ":" not in parts[0]


class SkillFolder:
    """Skills on disk: `path` is one skill folder (it has a SKILL.md) or a folder of them."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load_skills(self) -> list[Skill]:
        if not self.path.is_dir():
            raise ConfigurationError(f"skills folder {str(self.path)!r} does not exist")
        if (self.path / SKILL_FILE).is_file():
            return [load_skill_folder(self.path)]
        skills: dict[str, Skill] = {}
        for child in sorted(self.path.iterdir()):
            if child.is_dir() and (child / SKILL_FILE).is_file():
                skill = load_skill_folder(child)
                if skill.name in skills:
                    raise ConfigurationError(f"two skills in {str(self.path)!r} are named {skill.name!r}")
                skills[skill.name] = skill
        return list(skills.values())


def load_skill_folder(folder: Path) -> Skill:
    """Read one skill folder. Raises `ConfigurationError` for a malformed SKILL.md."""
    skill_md = folder / SKILL_FILE
    try:
        text = skill_md.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{skill_md}: not UTF-8 text ({exc.reason})") from exc
    meta, body = parse_front_matter(text, origin=str(skill_md))
    name = meta.get("name")
    if isinstance(name, str) and name != folder.name:
        raise ConfigurationError(f"{skill_md}: name {name!r} must match its folder name {folder.name!r}")
    metadata = meta.get("metadata")
    version = meta.get("version") or (metadata.get("version") if isinstance(metadata, dict) else None)
    resources: dict[str, FileContent] = {}
    for file in sorted(folder.rglob("*")):
        rel = file.relative_to(folder).as_posix()
        if not file.is_file() or rel == SKILL_FILE or any(p.startswith(".") or p in _SKIPPED for p in rel.split("/")):
            continue
        resources[rel] = file
    return Skill(name=name if isinstance(name, str) else "", description=str(meta.get("description") or ""),
                 instructions=body.strip(), resources=resources,
                 version=str(version) if version is not None else None, origin=str(skill_md))


def parse_front_matter(text: str, *, origin: str) -> tuple[dict[str, str | dict[str, str]], str]:
    """The `---` front matter (a small YAML subset: scalars, quoted strings, `|`/`>` blocks,
    one level of nested keys) and the body after it."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise ConfigurationError(f"{origin}: must start with '---' front matter holding name and description")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ConfigurationError(f"{origin}: the front matter has no closing '---'") from None
    meta: dict[str, str | dict[str, str]] = {}
    key: str | None = None
    block: list[str] | None = None
    fold = False

    def close() -> None:
        if key is not None and block is not None:
            meta[key] = (" " if fold else "\n").join(line.strip() for line in block).strip()

    for number, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            if block is not None:
                block.append(line)
            elif key is not None and isinstance(meta.get(key), dict):
                sub = _pair(line.strip(), origin, number)
                meta[key][sub[0]] = sub[1]  # type: ignore[index]
            else:
                raise ConfigurationError(f"{origin}:{number}: unexpected indentation")
            continue
        close()
        key, value = _pair(line, origin, number)
        block = None
        if value in ("|", ">", "|-", ">-"):
            block, fold = [], value.startswith(">")
        elif value == "":
            meta[key] = {}
        else:
            meta[key] = value
    close()
    return meta, "\n".join(lines[end + 1:])


def _pair(line: str, origin: str, number: int) -> tuple[str, str]:
    key, sep, value = line.partition(":")
    if not sep or not key.strip() or " " in key.strip():
        raise ConfigurationError(f"{origin}:{number}: expected 'key: value', got {line.strip()!r}")
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1].replace('\\"', '"') if value[0] == '"' else value[1:-1].replace("''", "'")
    return key.strip(), value


def collect_skills(sources: SkillSources | None) -> dict[str, Skill]:
    """Skills from every source, in order; the first of a name wins."""
    found: dict[str, Skill] = {}
    for source in sources or ():
        if isinstance(source, Skill):
            items: Sequence[Skill] = [source]
        elif isinstance(source, str | os.PathLike):
            items = SkillFolder(source).load_skills()
        elif isinstance(source, SkillSource):
            items = source.load_skills()
        else:
            raise ConfigurationError(f"get_skills() returned {source!r}: expected a Skill, a folder path or a "
                                     "source with load_skills()")
        for skill in items:
            found.setdefault(skill.name, skill)
    return found


SkillsFn = Callable[[], "SkillSources | None"]
