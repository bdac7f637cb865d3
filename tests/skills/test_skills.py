"""Skills: folders and in-memory definitions, the catalog, and the three skill tools."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio
import orjson
import pytest

from think import ConfigurationError, Think, open_agent
from think.messages import ToolPart
from think.skills import Skill, SkillFolder, SkillScript, SkillScriptResult
from think.skills.skill import collect_skills
from think.testing.models import ScriptedModel, call

SKILL_MD = """---
name: pdf-tools
description: Extract text and tables from PDF files. Use when the user mentions a PDF.
license: MIT
metadata:
  version: "1.2"
---
# PDF tools

Read `references/guide.md` first, then run `scripts/count.py`.
"""


def make_skills(root: Path) -> Path:
    skill = root / "skills" / "pdf-tools"
    (skill / "references").mkdir(parents=True)
    (skill / "scripts").mkdir()
    (skill / "SKILL.md").write_text(SKILL_MD)
    (skill / "references" / "guide.md").write_text("Pages start at 1.")
    (skill / "scripts" / "count.py").write_text(
        "import json, sys\ndata = json.load(sys.stdin)\n"
        "print(json.dumps({'pages': data['pages'], 'guide': open('references/guide.md').read()}))\n")
    (skill / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    (root / "skills" / "not-a-skill").mkdir()  # folders without a SKILL.md are ignored
    return root / "skills"


class LocalRunner:
    """Runs a script in a temporary copy of its skill, without isolation (tests only)."""

    async def run(self, script: SkillScript) -> SkillScriptResult:
        with tempfile.TemporaryDirectory() as tmp:
            for path, data in script.files.items():
                (Path(tmp) / path).parent.mkdir(parents=True, exist_ok=True)
                (Path(tmp) / path).write_bytes(data)
            done = await anyio.run_process([sys.executable, script.path], cwd=tmp, check=False,
                                           input=orjson.dumps(script.input))
        return SkillScriptResult(exit_code=done.returncode, stdout=done.stdout.decode(), stderr=done.stderr.decode())


def parts(result: object) -> list[ToolPart]:
    return [p for p in result.message.parts if isinstance(p, ToolPart)]  # type: ignore[attr-defined]


class Skilled(Think):
    folder: Path
    runner: LocalRunner | None = None
    model = ScriptedModel([
        [call("activate_skill", name="pdf-tools")],
        [call("read_skill_resource", name="pdf-tools", path="references/guide.md"),
         call("read_skill_resource", path="pdf-tools/logo.png"),
         call("read_skill_resource", name="pdf-tools", path="../secrets.txt"),
         call("read_skill_resource", name="pdf-tools", path="nope.md")],
        [call("run_skill_script", name="pdf-tools", path="scripts/count.py", input={"pages": 3})],
        "Done.",
    ])

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_system_prompt(self) -> str:
        return "You are Skilled."

    def get_skills(self) -> list[object]:
        return [self.folder, Skill(name="pdf-tools", description="shadowed by the folder's", instructions="-"),
                Skill(name="haiku", description="Write a haiku.", instructions="Count syllables: 5, 7, 5.")]

    def get_skill_script_runner(self) -> LocalRunner | None:
        return self.runner


async def test_the_catalog_and_the_skill_tools(tmp_path: Path, data_dir: Path) -> None:
    Skilled.folder = make_skills(tmp_path)
    Skilled.runner = LocalRunner()
    Skilled.model.requests.clear()
    async with open_agent(Skilled, "s", data_dir=data_dir) as agent:
        result = await agent.save_messages(["count the pages of report.pdf"])
        assert result.status == "completed"
        system = agent.model.requests[0].system
        assert system.startswith("You are Skilled.\n\n")  # the catalog is added to the agent's prompt
        assert ("THINK_SKILLS [readonly]\n" + "═" * 46 + "\nAvailable skills. When a task matches a skill, use "
                "activate_skill with its name before proceeding.\n- pdf-tools: Extract text and tables from PDF "
                "files. Use when the user mentions a PDF.\n- haiku: Write a haiku.") in system
        tools = {t.name for t in agent.model.requests[0].tools}
        assert {"activate_skill", "read_skill_resource", "run_skill_script"} <= tools

        activated, guide, logo, escape, missing, ran = parts(result)
        assert activated.output == (
            '<skill_content name="pdf-tools" version="1.2">\n# PDF tools\n\nRead `references/guide.md` first, then '
            'run `scripts/count.py`.\n<skill_resources>\n'
            '<file kind="resource" encoding="base64" size="10">logo.png</file>\n'
            '<file kind="resource" encoding="utf8" size="17">references/guide.md</file>\n'
            '<file kind="script" encoding="utf8" size="134">scripts/count.py</file>\n'
            '</skill_resources>\n</skill_content>\n\nBundled resources:\n'
            '- logo.png (resource, base64, image/png, 10 bytes)\n'
            '- references/guide.md (resource, utf8, text/markdown, 17 bytes)\n'
            '- scripts/count.py (script, utf8, text/x-python, 134 bytes)')
        assert guide.output == ('<skill_resource name="pdf-tools" path="references/guide.md" kind="resource" '
                                'encoding="utf8" mimeType="text/markdown">Pages start at 1.</skill_resource>')
        assert isinstance(logo.output, str) and 'encoding="base64"' in logo.output and "iVBORw0KGgoA/w==" in logo.output
        assert escape.state == "output-error" and "without '..'" in (escape.error_text or "")
        assert missing.state == "output-error"
        assert "No file 'nope.md' in skill 'pdf-tools'" in (missing.error_text or "")
        assert orjson.loads(ran.output) == {"pages": 3, "guide": "Pages start at 1."}


async def test_without_a_runner_scripts_fail_with_a_clear_error(tmp_path: Path, data_dir: Path) -> None:
    class NoRunner(Skilled):
        runner = None
        model = ScriptedModel([[call("run_skill_script", name="pdf-tools", path="scripts/count.py")], "Ok."])

    NoRunner.folder = make_skills(tmp_path)
    async with open_agent(NoRunner, "n", data_dir=data_dir) as agent:
        [failed] = parts(await agent.save_messages(["count"]))
        assert failed.state == "output-error"
        assert (failed.error_text or "").startswith("Skill script failed: scripts cannot run in this agent")


def write_skill(root: Path, name: str, text: str) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "SKILL.md").write_text(text)
    return root


@pytest.mark.parametrize(("folder", "text", "problem"), [
    ("a", "# no front matter", "must start with '---' front matter"),
    ("a", "---\nname: a\ndescription: x\n", "no closing '---'"),
    ("a", "---\nname: a\n---\nbody", "a description is required"),
    ("Bad_Name", "---\nname: Bad_Name\ndescription: x\n---\n", "lowercase letters, digits and single hyphens"),
    ("a", "---\nname: b\ndescription: x\n---\n", "name 'b' must match its folder name 'a'"),
    ("a", "---\nname: a\ndescription x\n---\n", "SKILL.md:3: expected 'key: value'"),
    ("a", "---\nname: a\n  description: x\n---\n", "SKILL.md:3: unexpected indentation"),
    ("a", "---\nname: a\ndescription: " + "d" * 1100 + "\n---\n", "the limit is 1024"),
])
def test_malformed_skill_files_are_clear_errors(tmp_path: Path, folder: str, text: str, problem: str) -> None:
    root = write_skill(tmp_path / "skills", folder, text)
    with pytest.raises(ConfigurationError, match=r"SKILL\.md") as raised:
        SkillFolder(root).load_skills()
    assert problem in str(raised.value)


def test_sources_merge_in_order_and_bad_sources_are_named(tmp_path: Path) -> None:
    first = Skill(name="x", description="first", instructions="1")
    found = collect_skills([first, Skill(name="x", description="second", instructions="2")])
    assert found["x"] is first
    with pytest.raises(ConfigurationError, match="does not exist"):
        collect_skills([tmp_path / "missing"])
    with pytest.raises(ConfigurationError, match="expected a Skill, a folder path"):
        collect_skills([42])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match=r"must be relative, without '\.\.'"):
        Skill(name="y", description="d", instructions="i", resources={"../etc/passwd": "x"})


async def test_a_malformed_skill_fails_the_turn_and_loses_nothing(tmp_path: Path, data_dir: Path) -> None:
    class Broken(Think):
        def get_model(self) -> ScriptedModel:
            return ScriptedModel(["never"])

        def get_skills(self) -> list[object]:
            return [write_skill(tmp_path / "broken", "oops", "---\nname: oops\n---\n")]

    async with open_agent(Broken, "b", data_dir=data_dir) as agent:
        await agent.add_messages(["an earlier message"])
        result = await agent.save_messages(["hello"])
        assert result.status == "error" and "oops/SKILL.md" in (result.error or "")
        assert "a description is required" in (result.error or "")
        assert [m.text for m in agent.messages] == ["an earlier message", "hello"]


@pytest.mark.usefixtures("bubblewrap")
async def test_by_default_scripts_run_in_the_sandbox(tmp_path: Path, data_dir: Path) -> None:
    from think.skills.sandbox import sandbox_runner_if_available

    assert sandbox_runner_if_available() is not None

    class Sandboxed(Think):
        model = ScriptedModel([[call("run_skill_script", name="pdf-tools", path="scripts/count.py",
                                     input={"pages": 12})], "Twelve pages."])

        def get_model(self) -> ScriptedModel:
            return self.model

        def get_skills(self) -> list[object]:
            return [make_skills(tmp_path)]

    async with open_agent(Sandboxed, "sb", data_dir=data_dir) as agent:
        [ran] = parts(await agent.save_messages(["how many pages?"]))
        assert ran.state == "output-available"
        assert orjson.loads(ran.output) == {"pages": 12, "guide": "Pages start at 1."}
