"""What every agent gets by default (tools, prompt, capability block), and each way to turn it off,
as the README's "What every agent gets by default" states it: real agents, real SQLite files, the
prompt and tools the model is really sent."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from think import ModelRequest, Think, TurnConfig, TurnContext, open_agent, tool
from think.context.prompt import CAPABILITY_SENTENCE, DEFAULT_SYSTEM_PROMPT
from think.testing.models import ScriptedModel
from think.tools import Tool

README = Path(__file__).resolve().parents[2] / "README.md"
FILE_TOOLS = {"read", "write", "edit", "list", "find", "grep", "delete"}


class Plain(Think):
    def get_model(self) -> ScriptedModel:
        if not hasattr(self, "scripted"):
            self.scripted = ScriptedModel(["ok"])
        return self.scripted


class NoBash(Plain):
    workspace_bash = False


class NoWorkspace(Plain):
    def workspace_tools(self) -> dict[str, Tool]:
        return {}


class OwnPrompt(Plain):
    def get_system_prompt(self) -> str:
        return "You answer in haiku."


class OwnPromptNoBlock(Plain):
    def get_system_prompt(self) -> str:
        return f"{CAPABILITY_SENTENCE} You answer in haiku."


@tool
def read(path: str) -> str:
    """Read a page of the company wiki.

    Args:
        path: The wiki page.
    """
    return f"wiki page {path}"


class OwnRead(Plain):
    def get_tools(self) -> list[Tool]:
        return [read]


class ReplacedPrompt(Plain):
    async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
        return TurnConfig(system="Only this.")


async def first_request(cls: type[Plain], data_dir: Path) -> tuple[ModelRequest, Any]:
    async with open_agent(cls, "a", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert result.status == "completed"
        return agent.scripted.requests[0], agent


def readme_defaults_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("### What every agent gets by default")
    return text[start:text.index("\n## ", start)]


async def test_the_readme_names_every_default_tool(data_dir: Path) -> None:
    request, _ = await first_request(Plain, data_dir)
    named = set(re.findall(r"`([a-z_]+)`", readme_defaults_section()))
    assert {t.name for t in request.tools} == FILE_TOOLS | {"bash"}
    assert {t.name for t in request.tools} <= named


async def test_a_plain_agent_gets_the_default_prompt_and_a_true_capability_block(data_dir: Path) -> None:
    request, _ = await first_request(Plain, data_dir)
    assert request.system.startswith(DEFAULT_SYSTEM_PROMPT + "\n\n" + CAPABILITY_SENTENCE)
    assert "persistent workspace filesystem" in request.system
    assert "sandboxed bash shell" in request.system


async def test_workspace_bash_false_removes_bash_only(data_dir: Path) -> None:
    request, _ = await first_request(NoBash, data_dir)
    assert {t.name for t in request.tools} == FILE_TOOLS
    assert "bash" not in request.system and "persistent workspace filesystem" in request.system


async def test_an_empty_workspace_tools_removes_every_file_tool(data_dir: Path) -> None:
    request, agent = await first_request(NoWorkspace, data_dir)
    assert request.tools == ()
    assert "No tools in this turn" in request.system
    assert agent.server_tools() == []  # nor does a client's answer count as one of them


async def test_get_system_prompt_replaces_the_default_and_keeps_the_block(data_dir: Path) -> None:
    request, _ = await first_request(OwnPrompt, data_dir)
    assert request.system.startswith("You answer in haiku.\n\n" + CAPABILITY_SENTENCE)
    assert DEFAULT_SYSTEM_PROMPT not in request.system


async def test_a_prompt_with_the_capability_sentence_gets_no_block(data_dir: Path) -> None:
    request, _ = await first_request(OwnPromptNoBlock, data_dir)
    assert request.system == f"{CAPABILITY_SENTENCE} You answer in haiku."


async def test_before_turn_system_replaces_the_whole_prompt(data_dir: Path) -> None:
    request, _ = await first_request(ReplacedPrompt, data_dir)
    assert request.system == "Only this."


async def test_a_tool_of_yours_replaces_the_default_of_the_same_name(data_dir: Path) -> None:
    request, _ = await first_request(OwnRead, data_dir)
    described = {t.name: t.description for t in request.tools}
    assert set(described) == FILE_TOOLS | {"bash"}
    assert described["read"].startswith("Read a page of the company wiki.")


def test_the_quick_start_states_each_default_and_its_off_switch() -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Quick start")
    quick_start = text[start:text.index("\n## ", start + 1)]
    for name in sorted(FILE_TOOLS | {"bash"}):
        assert f"`{name}`" in quick_start, name
    for switch in ("`workspace_tools()` to return `{}`", "`workspace_bash = False`", "`get_system_prompt()`",
                   "DEFAULT_SYSTEM_PROMPT"):
        assert switch in quick_start, switch
