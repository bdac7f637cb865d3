"""Context blocks added and removed while the agent runs (`Think.add_context` / `remove_context`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from think import Think, open_agent
from think.errors import ConfigurationError
from think.testing.models import ScriptedModel


class Plain(Think):
    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.model = ScriptedModel(lambda request: "ok")

    def get_model(self) -> ScriptedModel:
        return self.model

    def configure_session(self, session):  # type: ignore[no-untyped-def]
        return session.with_context("persona", provider=_Fixed("You are terse.")).with_cached_prompt()


class _Fixed:
    def __init__(self, text: str) -> None:
        self.text = text

    async def get(self) -> str:
        return self.text


async def test_a_block_added_at_run_time_reaches_the_next_turn_and_leaves_when_removed(data_dir: Path) -> None:
    async with open_agent(Plain, "ctx", data_dir=data_dir) as agent:
        await agent.save_messages("one")
        assert "You are terse." in agent.model.requests[-1].system
        await agent.add_context("ticket", content="Ticket #42: the printer is on fire.",
                                description="The ticket this chat is about")
        await agent.save_messages("two")
        system = agent.model.requests[-1].system
        assert "Ticket #42: the printer is on fire." in system and "You are terse." in system
        await agent.remove_context("ticket")
        await agent.save_messages("three")
        assert "Ticket #42" not in agent.model.requests[-1].system
        assert "You are terse." in agent.model.requests[-1].system


async def test_a_session_other_than_the_root_gets_its_own_blocks(data_dir: Path) -> None:
    async with open_agent(Plain, "ctx-sessions", data_dir=data_dir) as agent:
        other = agent.sessions.create(id="other")
        await agent.add_context("note", content="Only for the other session.", session=other.id)
        await agent.save_messages("root")
        await agent.save_messages("other", session=other.id)
        assert "Only for the other session." not in agent.model.requests[0].system
        assert "Only for the other session." in agent.model.requests[1].system


async def test_adding_a_label_twice_or_removing_an_unknown_one_is_an_error(data_dir: Path) -> None:
    async with open_agent(Plain, "ctx-bad", data_dir=data_dir) as agent:
        with pytest.raises(ConfigurationError):
            await agent.add_context("persona")
        with pytest.raises(Exception, match="nope"):
            await agent.remove_context("nope")
