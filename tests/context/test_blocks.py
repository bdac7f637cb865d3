"""Context blocks: the system prompt they make, and the tools the model edits them with."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from think import ModelRequest, Think, open_agent
from think.context.blocks import RULE
from think.errors import ContextError
from think.messages import ToolPart
from think.sessions import MIGRATIONS, Session
from think.storage import Database, migrate
from think.testing.models import ScriptedModel, call


class Soul:
    """A read-only provider."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def get(self) -> str:
        return self.text


class Recipes:
    """A loadable provider: a catalog, and documents by key."""

    docs: ClassVar[dict[str, str]] = {"pancakes": "Mix flour, milk and eggs.", "bread": "Knead for ten minutes."}

    async def get(self) -> str:
        return "\n".join(f"- {key}" for key in self.docs)

    async def load(self, key: str) -> str | None:
        return self.docs.get(key)


@pytest.fixture
def session(tmp_path: Path) -> Session:
    db = Database(tmp_path / "blocks.db")
    migrate(db, MIGRATIONS)
    return Session(db)


async def test_the_prompt_renders_each_block_under_a_header(session: Session) -> None:
    session.with_context("soul", provider=Soul("You are terse.")).with_context("empty", provider=Soul(""))
    session.with_context("memory", description="What you learned", max_tokens=200)
    await session.replace_context_block("memory", "The user is Ada.")
    assert await session.system_prompt() == (
        f"{RULE}\nSOUL [readonly]\n{RULE}\nYou are terse.\n\n"
        f"{RULE}\nMEMORY (What you learned) [3% — 6/200 tokens] [writable]\n{RULE}\nThe user is Ada.")
    block = await session.get_context_block("memory")
    assert (block.tokens, block.max_tokens, block.writable) == (6, 200, True)


async def test_writes_past_max_tokens_or_to_unknown_and_read_only_blocks_fail_clearly(session: Session) -> None:
    session.with_context("soul", provider=Soul("x")).with_context("memory", max_tokens=10)
    await session.replace_context_block("memory", "short")
    with pytest.raises(ContextError, match=r"about 25 tokens, over its limit of 10.*nothing was written"):
        await session.replace_context_block("memory", "word " * 19)
    with pytest.raises(ContextError, match=r"unknown context block 'nope' \(blocks: soul, memory\)"):
        await session.replace_context_block("nope", "x")
    with pytest.raises(ContextError, match="'soul' is readonly"):
        await session.replace_context_block("soul", "x")
    assert (await session.get_context_block("memory")).content == "short"


class Remembering(Think):
    """Saves a fact with set_context on the first turn, then answers."""

    model = ScriptedModel([[call("set_context", label="memory", content="The user's name is Ada.")], "Noted.",
                           "Hello Ada."])

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_system_prompt(self) -> str:
        return "NOT USED when blocks exist"

    def configure_session(self, session: Session) -> Session:
        return session.with_context("soul", provider=Soul("You are a kind assistant.")) \
            .with_context("memory", description="Facts about the user", max_tokens=500).with_cached_prompt()


async def test_a_memory_written_by_the_model_survives_a_restart_and_shows_in_the_next_prompt(data_dir: Path) -> None:
    async with open_agent(Remembering, "m", data_dir=data_dir) as agent:
        result = await agent.save_messages(["My name is Ada."])
        part = next(p for p in result.message.parts if isinstance(p, ToolPart))  # type: ignore[union-attr]
        assert part.output == "Written to memory. Usage: 1% (7/500 tokens)"
        first, second = agent.model.requests
        assert first.system == second.system  # frozen for the whole turn: the prefix cache stays warm
        assert "Ada" not in first.system and first.system.startswith(f"{RULE}\nSOUL [readonly]")
        assert "NOT USED" not in first.system
        assert "set_context" in [t.name for t in first.tools]
    async with open_agent(Remembering, "m", data_dir=data_dir) as agent:
        await agent.save_messages(["Who am I?"])
        system = agent.model.requests[-1].system
        memory = f"MEMORY (Facts about the user) [1% — 7/500 tokens] [writable]\n{RULE}\nThe user's name is Ada."
        assert memory in system


class Careless(Think):
    model = ScriptedModel([[call("set_context", label="memory", content="blah " * 400),
                            call("set_context", label="diary", content="x"),
                            call("set_context", label="soul", content="x")], "Sorry."])

    def get_model(self) -> ScriptedModel:
        return self.model

    def configure_session(self, session: Session) -> Session:
        return session.with_context("soul", provider=Soul("Be brief.")).with_context("memory", max_tokens=100)


async def test_the_model_gets_clear_errors_and_nothing_is_written(data_dir: Path) -> None:
    async with open_agent(Careless, "c", data_dir=data_dir) as agent:
        result = await agent.save_messages(["remember everything"])
        assert result.status == "completed"
        over, unknown, readonly = [p for p in result.message.parts if isinstance(p, ToolPart)]  # type: ignore[union-attr]
        assert over.state == "output-error"
        assert over.error_text == ("Error: content for 'memory' is about 520 tokens, over its limit of 100; "
                                   "shorten it (nothing was written)")
        assert unknown.state == "output-error" and "context block 'diary' does not exist; writable blocks: memory" \
            in (unknown.error_text or "")
        assert "context block 'soul' is not writable" in (readonly.error_text or "")
        assert (await agent.session.get_context_block("memory")).content == ""


class Cook(Think):
    model = ScriptedModel([[call("load_context", label="recipes", key="pancakes")],
                           [call("load_context", label="recipes", key="cake")], "Mix flour, milk and eggs.",
                           [call("unload_context", label="recipes", key="pancakes")], "Done.",
                           [call("search_context", label="history", query="pancakes")], "Found it."])

    def get_model(self) -> ScriptedModel:
        return self.model

    def configure_session(self, session: Session) -> Session:
        return session.with_context("recipes", provider=Recipes()).with_searchable_history()


async def test_loading_unloading_and_searching(data_dir: Path) -> None:
    async with open_agent(Cook, "k", data_dir=data_dir) as agent:
        first = await agent.save_messages(["how do I make pancakes?"])
        loaded, missing = [p for p in first.message.parts if isinstance(p, ToolPart)]  # type: ignore[union-attr]
        assert (loaded.output, missing.output) == ("Mix flour, milk and eggs.", "Not found: cake")
        prompt = agent.model.requests[0].system
        assert f"RECIPES [loadable]\n{RULE}\n- pancakes\n- bread" in prompt and "HISTORY [searchable]" in prompt

        second = await agent.save_messages(["thanks, you can forget it"])
        unloaded = next(p for p in second.message.parts if isinstance(p, ToolPart))  # type: ignore[union-attr]
        assert unloaded.output == 'Unloaded "pancakes" from recipes. Context reclaimed.'
        first_reply = agent.session.get(first.message.id)  # type: ignore[union-attr]
        assert first_reply is not None and first_reply.tool_parts[0].output == "[skill unloaded: pancakes]"
        described = {t.name: t.description for t in agent.model.requests[3].tools}
        assert "Loaded now: recipes/pancakes." in described["unload_context"]

        third = await agent.save_messages(["what did I ask first?"])
        found = next(p for p in third.message.parts if isinstance(p, ToolPart))  # type: ignore[union-attr]
        assert isinstance(found.output, str) and "how do I make **pancakes**?" in found.output


async def test_without_blocks_the_agent_prompt_is_used(data_dir: Path) -> None:
    class Plain(Think):
        model = ScriptedModel(["hi"])

        def get_model(self) -> ScriptedModel:
            return self.model

        def get_system_prompt(self) -> str:
            return "You are plain."

    async with open_agent(Plain, "p", data_dir=data_dir) as agent:
        await agent.save_messages(["hello"])
        request: ModelRequest = agent.model.requests[0]
        assert request.system.startswith("You are plain.")
        assert not {"set_context", "load_context", "search_context"} & {t.name for t in request.tools}


async def test_a_cached_prompt_stays_byte_identical_across_restarts_until_refreshed(tmp_path: Path) -> None:
    db = Database(tmp_path / "cached.db")
    migrate(db, MIGRATIONS)
    soul = Soul("Today is Monday.")
    first = await Session(db).with_context("soul", provider=soul).with_cached_prompt().system_prompt()
    soul.text = "Today is Tuesday."
    restarted = Session(db).with_context("soul", provider=soul).with_cached_prompt()
    assert await restarted.system_prompt() == first  # what the provider says now does not leak in
    assert "Tuesday" in await restarted.refresh_system_prompt()
    assert "Tuesday" in await Session(db).with_context("soul", provider=soul).with_cached_prompt().system_prompt()
    uncached = Session(db).with_context("soul", provider=Soul("Today is Friday."))
    assert "Friday" in await uncached.system_prompt()  # without the cache a new instance renders again
