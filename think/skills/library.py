"""`SkillLibrary`: an agent's skills as a catalog in the system prompt and three tools.

* `activate_skill {name}` returns the skill's instructions and the list of its files;
* `read_skill_resource {name?, path}` returns one file (`path` may be `skill/relative/path`);
* `run_skill_script {name, path, input}` runs a script through the agent's `SkillScriptRunner`
  (`Think.get_skill_script_runner()`); without a runner it fails with a clear error.

Skills load once per agent instance, on first use (`reload()` reads the sources again).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from think.context.blocks import ContextBlock, render_block
from think.context.tokens import estimate_tokens
from think.errors import ToolFailed
from think.messages import JSONObject
from think.skills.skill import Skill, SkillFile, SkillSources, collect_skills, is_safe_path
from think.tools.tool import Tool, ToolContext

CATALOG_LABEL = "think_skills"
CATALOG_INTRO = "Available skills. When a task matches a skill, use activate_skill with its name before proceeding."
MAX_RESOURCE_CHARS = 200_000
SCRIPT_TIMEOUT = 30.0


@dataclass(frozen=True, kw_only=True)
class SkillScript:
    """A script to run: its skill's files are laid out as the script's working directory."""

    skill: str
    path: str
    language: str
    """"python", "bash", "javascript" or "typescript"."""
    files: Mapping[str, bytes] = field(repr=False)
    """Every file of the skill (SKILL.md included), by relative path."""
    input: JSONObject
    """Given to the script as JSON on its standard input."""
    timeout: float = SCRIPT_TIMEOUT


@dataclass(frozen=True, kw_only=True)
class SkillScriptResult:
    exit_code: int
    stdout: str
    stderr: str = ""
    timed_out: bool = False


@runtime_checkable
class SkillScriptRunner(Protocol):
    """Runs skill scripts, in isolation: a skill's scripts are code the model chooses to run."""

    async def run(self, script: SkillScript) -> SkillScriptResult: ...


RunnerFn = Callable[[], "SkillScriptRunner | None"]


class SkillLibrary:
    """The skills of one agent. See the module docstring."""

    def __init__(self, sources: Callable[[], SkillSources | None], runner: RunnerFn) -> None:
        self._sources = sources
        self._runner = runner
        self._skills: dict[str, Skill] | None = None
        self._tools: dict[str, Tool] | None = None
        self._catalog = ""

    def skills(self) -> dict[str, Skill]:
        """Every skill by name (loaded on first use; `ConfigurationError` for a malformed one)."""
        if self._skills is None:
            skills = collect_skills(self._sources())
            self._catalog = self._render_catalog(skills)
            self._tools = self._build_tools(skills) if skills else {}
            self._skills = skills
        return self._skills

    def reload(self) -> None:
        self._skills = self._tools = None

    def catalog(self) -> str:
        """The `think_skills` block for the system prompt ("" without skills)."""
        self.skills()
        return self._catalog

    def tools(self) -> dict[str, Tool]:
        self.skills()
        return dict(self._tools or {})

    @staticmethod
    def _render_catalog(skills: Mapping[str, Skill]) -> str:
        if not skills:
            return ""
        content = "\n".join([CATALOG_INTRO, *(f"- {s.name}: {s.description}" for s in skills.values())])
        return render_block(ContextBlock(label=CATALOG_LABEL, description=None, content=content,
                                         tokens=estimate_tokens(content), max_tokens=None, kind="readonly"))

    def _build_tools(self, skills: Mapping[str, Skill]) -> dict[str, Tool]:
        names = list(skills)
        name_schema = {"type": "string", "enum": names, "description": "The skill's name."}
        tools = {
            "activate_skill": Tool(
                name="activate_skill", execute=self._activate,
                description="Load a skill's instructions before doing a task it covers.",
                input_schema={"type": "object", "properties": {"name": name_schema}, "required": ["name"],
                              "additionalProperties": False}),
            "read_skill_resource": Tool(
                name="read_skill_resource", execute=self._read,
                description="Read a file bundled with a skill (paths as listed by activate_skill).",
                input_schema={"type": "object", "properties": {
                    "name": name_schema,
                    "path": {"type": "string", "description": "Relative path, or 'skill-name/relative/path'."}},
                    "required": ["path"], "additionalProperties": False}),
        }
        if any(f.kind == "script" for s in skills.values() for f in s.files()):
            tools["run_skill_script"] = Tool(
                name="run_skill_script", execute=self._run,
                description="Run a script bundled with a skill; `input` reaches it as JSON on standard input.",
                input_schema={"type": "object", "properties": {
                    "name": name_schema, "path": {"type": "string"},
                    "input": {"type": "object", "description": "JSON input for the script.", "default": {}}},
                    "required": ["name", "path"], "additionalProperties": False})
        return tools

    def _skill(self, name: Any) -> Skill | None:
        return self.skills().get(str(name))

    async def _activate(self, arguments: JSONObject, ctx: ToolContext) -> str:
        skill = self._skill(arguments.get("name"))
        if skill is None:
            return f"Skill not found: {arguments.get('name')}"
        from xml.sax.saxutils import escape, quoteattr  # (it imports urllib.request: not at start-up)

        version = f" version={quoteattr(skill.version)}" if skill.version else ""
        files = skill.files()
        lines = [f"<skill_content name={quoteattr(skill.name)}{version}>", skill.instructions]
        if files:
            lines.append("<skill_resources>")
            lines += [f"<file kind={quoteattr(f.kind)} encoding={quoteattr(f.encoding)} size=\"{f.size}\">"
                      f"{escape(f.path)}</file>" for f in files]
            lines.append("</skill_resources>")
        lines.append("</skill_content>")
        if files:
            lines += ["", "Bundled resources:"]
            lines += [f"- {f.path} ({f.kind}, {f.encoding}, {f.mime_type}, {f.size} bytes)" for f in files]
        return "\n".join(lines)

    def _locate(self, arguments: JSONObject) -> tuple[Skill, SkillFile]:
        path = str(arguments.get("path") or "")
        name = arguments.get("name")
        if not name and "/" in path:
            name, path = path.split("/", 1)
        if not is_safe_path(path):
            raise ToolFailed(f"Invalid path {path!r}: use a path relative to the skill, without '..'")
        skill = self._skill(name)
        if skill is None:
            raise ToolFailed(f"Skill not found: {name}")
        file = skill.file(path)
        if file is None:
            listed = ", ".join(f.path for f in skill.files()) or "none"
            raise ToolFailed(f"No file {path!r} in skill {skill.name!r} (files: {listed})")
        return skill, file

    async def _read(self, arguments: JSONObject, ctx: ToolContext) -> str:
        skill, file = self._locate(arguments)
        data = file.read()
        text = data.decode() if file.encoding == "utf8" else base64.b64encode(data).decode()
        if len(text) > MAX_RESOURCE_CHARS:
            text = text[:MAX_RESOURCE_CHARS] + f"\n[truncated: {len(text) - MAX_RESOURCE_CHARS} more characters]"
        from xml.sax.saxutils import quoteattr

        return (f"<skill_resource name={quoteattr(skill.name)} path={quoteattr(file.path)} kind={quoteattr(file.kind)} "
                f"encoding={quoteattr(file.encoding)} mimeType={quoteattr(file.mime_type)}>{text}</skill_resource>")

    async def _run(self, arguments: JSONObject, ctx: ToolContext) -> str:
        skill, file = self._locate(arguments)
        if file.kind != "script" or file.language is None:
            raise ToolFailed(f"{file.path!r} in skill {skill.name!r} is not a script (.py, .sh, .js or .ts "
                             "under scripts/)")
        runner = self._runner()
        if runner is None:
            raise ToolFailed("Skill script failed: scripts cannot run in this agent, it has no script runner "
                             "(the developer can return one from get_skill_script_runner()). Follow the skill's "
                             "instructions without running the script, or tell the user.")
        payload = arguments.get("input") or {}
        if not isinstance(payload, dict):
            raise ToolFailed("input must be a JSON object")
        files = {SKILL_MD: _skill_md(skill), **{f.path: f.read() for f in skill.files()}}
        try:
            result = await runner.run(SkillScript(skill=skill.name, path=file.path, language=file.language,
                                                  files=files, input=payload))
        except Exception as exc:
            raise ToolFailed(f"Skill script failed: {type(exc).__name__}: {exc}") from exc
        if result.timed_out:
            raise ToolFailed(f"Skill script failed: it ran out of time\n{result.stderr}".rstrip())
        if result.exit_code != 0:
            raise ToolFailed(f"Skill script failed: exit code {result.exit_code}\n{result.stderr}".rstrip())
        return result.stdout


SKILL_MD = "SKILL.md"


def _skill_md(skill: Skill) -> bytes:
    return (f"---\nname: {skill.name}\ndescription: {skill.description}\n---\n\n{skill.instructions}\n").encode()
