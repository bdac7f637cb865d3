"""Prompt-cache-stable truncation (`Think.truncation_step`): older tool outputs are truncated for
the model, but the cutoff moves only every `truncation_step` messages, so the prefix a provider
caches stays byte-identical between moves. A fake provider counts the identical prefix of each
request (by message) and reports it as cached input tokens, as providers do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from think import Think, open_agent, tool
from think.context.blocks import WhenChanged
from think.context.reminders import REMINDER_PART
from think.models.base import ModelRequest, ToolMessage
from think.sessions import Session
from think.testing.models import Reply, ScriptedModel, call, text, usage


class PrefixCache:
    """What a provider's prompt cache sees: the longest prefix (system + messages) identical to
    the previous request's; tokens are characters / 4."""

    def __init__(self) -> None:
        self.previous: list[str] = []
        self.cached = 0
        self.total = 0

    def __call__(self, request: ModelRequest) -> tuple[int, int]:
        current = [request.system, *(repr(m) for m in request.messages)]
        same = 0
        for before, now in zip(self.previous, current, strict=False):
            if before != now:
                break
            same += 1
        self.previous = current
        total, cached = sum(map(len, current)) // 4, sum(map(len, current[:same])) // 4
        self.total += total
        self.cached += cached
        return total, cached


@tool
def read_doc(name: str) -> str:
    """Read a document.

    Args:
        name: Which one.
    """
    return f"{name}: " + "lorem ipsum " * 200


def agent_class(step: int, cache: PrefixCache, seen: list[ModelRequest] | None = None) -> type[Think]:
    def script(request: ModelRequest) -> Reply:
        if seen is not None:
            seen.append(request)
        total, cached = cache(request)
        if isinstance(request.messages[-1], ToolMessage):
            return [text(f"Summary of {request.last_user_text}."), usage(input=total, cached=cached, output=5)]
        return [call("read_doc", name=request.last_user_text), usage(input=total, cached=cached, output=5)]

    class Cached(Think):
        truncation_step = step
        workspace_bash = False

        def get_model(self) -> ScriptedModel:
            return ScriptedModel(script)

        def get_tools(self) -> list[Any]:
            return [read_doc]

        def get_system_prompt(self) -> str:
            return "You summarise documents."

    return Cached


async def run(tmp_path: Path, step: int, turns: int = 24) -> float:
    """The share of input tokens the provider served from its cache over `turns` turns."""
    cache = PrefixCache()
    reported = 0
    async with open_agent(agent_class(step, cache), f"step-{step}", data_dir=tmp_path) as agent:
        for i in range(turns):
            result = await agent.save_messages(f"doc-{i}")
            assert result.status == "completed" and result.usage is not None
            reported += sum(s.cached_input_tokens or 0 for s in result.usage.steps)
    assert reported == cache.cached  # what the provider reported reaches the turn's usage
    return cache.cached / cache.total


async def test_a_stepped_cutoff_keeps_the_provider_cache_hitting(tmp_path: Path) -> None:
    every_message = await run(tmp_path / "1", 1)
    stepped = await run(tmp_path / "8", 8)
    print(f"cached input share over 24 turns: cutoff moving every message {every_message:.0%}, "
          f"every 8 messages {stepped:.0%}")
    # Uncached input (what a provider bills in full) at least a third lower with the step.
    assert 1 - stepped < (1 - every_message) * 2 / 3


def block_agent_class(when_changed: WhenChanged, cache: PrefixCache, seen: list[ModelRequest]) -> type[Think]:
    base = agent_class(8, cache, seen)

    class WithStatus(base):  # type: ignore[valid-type,misc]
        def configure_session(self, session: Session) -> Session:
            return (session.with_context("soul", provider=Fixed("You summarise documents. " * 40))
                    .with_context("status", description="The build the user is on", when_changed=when_changed)
                    .with_cached_prompt())

    return WithStatus


class Fixed:
    def __init__(self, text: str) -> None:
        self.text = text

    async def get(self) -> str:
        return self.text


async def run_with_block_changes(tmp_path: Path, when_changed: WhenChanged, turns: int = 24) -> float:
    """The cached share over `turns` turns while the application rewrites a context block every
    third turn (a build number, say)."""
    cache, seen = PrefixCache(), list[ModelRequest]()
    async with open_agent(block_agent_class(when_changed, cache, seen), when_changed, data_dir=tmp_path) as agent:
        for i in range(turns):
            if i % 3 == 0:
                await agent.session.replace_context_block("status", f"The user is on build {i}.")
            result = await agent.save_messages(f"doc-{i}")
            assert result.status == "completed"
            last = seen[-1]  # the model knows the newest build, whichever way it was told
            told = last.system + "".join(repr(m) for m in last.messages)
            assert f"build {i - i % 3}." in told
    return cache.cached / cache.total


async def test_context_block_changes_as_reminders_keep_the_cache_hitting(tmp_path: Path) -> None:
    rewrite = await run_with_block_changes(tmp_path / "rewrite", "rewrite")
    remind = await run_with_block_changes(tmp_path / "remind", "remind")
    print(f"cached input share over 24 turns, a block changing every 3rd turn: prompt rewritten {rewrite:.1%}, "
          f"changes as reminders {remind:.1%}")
    assert 1 - remind < (1 - rewrite) * 0.6  # uncached input down by more than 40%


async def test_a_reminder_is_stored_where_it_was_given_and_survives_a_restart(tmp_path: Path) -> None:
    cache, seen = PrefixCache(), list[ModelRequest]()
    cls = block_agent_class("remind", cache, seen)
    async with open_agent(cls, "r", data_dir=tmp_path) as agent:
        await agent.save_messages("doc-a")  # the block is empty: the prompt says so, no reminder
        await agent.session.replace_context_block("status", "The user is on build 7.")
        await agent.save_messages("doc-b")
        await agent.save_messages("doc-c")  # nothing changed since: no second reminder
        parts = [[p.type for p in m.parts] for m in agent.messages if m.role == "user"]
        assert parts == [["text"], ["text", REMINDER_PART], ["text"]]
        before = [repr(m) for m in seen[-1].messages]
        system = seen[-1].system
    async with open_agent(cls, "r", data_dir=tmp_path) as agent:
        await agent.save_messages("doc-d")
        assert seen[-1].system == system  # the frozen prompt was never rewritten
        assert [repr(m) for m in seen[-1].messages][:len(before)] == before
        assert any("doc-b" in m and "build 7" in m for m in before) and "build 7" not in system


async def test_a_reminder_compacted_away_is_given_again(tmp_path: Path) -> None:
    cache, seen = PrefixCache(), list[ModelRequest]()
    async with open_agent(block_agent_class("remind", cache, seen), "c", data_dir=tmp_path) as agent:
        await agent.save_messages("doc-0")  # the prompt is frozen with an empty status
        await agent.session.replace_context_block("status", "The user is on build 7.")
        await agent.save_messages("doc-a")  # reminded here
        first_user = agent.messages[0].id
        agent.session.add_compaction("Summary: documents were read.", first_user, agent.messages[-1].id)
        await agent.save_messages("doc-b")
        told = [repr(m) for m in seen[-1].messages]
        users = [m for m in told if m.startswith("UserMessage")]  # doc-a's reminder is in the summary's range
        assert sum("build 7" in m for m in users) == 1 and "build 7" in users[-1]
