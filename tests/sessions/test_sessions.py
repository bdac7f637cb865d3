"""Many sessions in one agent: create, list, fork, and turns that target a session."""

from __future__ import annotations

from pathlib import Path

import pytest

from think import StorageError, Think, open_agent
from think.sessions import Session
from think.stream.fanout import ChunkEvent, TranscriptChanged, TurnEvent
from think.testing.models import ScriptedModel


class Echo(Think):
    """Repeats the last user message and counts what it saw."""

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda r: f"{r.last_user_text} ({len(r.messages)} seen)")

    def configure_session(self, session: Session) -> Session:
        return session.with_context("notes", description="Facts about this conversation", max_tokens=100)


async def test_create_list_and_address_sessions(data_dir: Path) -> None:
    async with open_agent(Echo, "a", data_dir=data_dir) as agent:
        await agent.save_messages(["root chat"])
        work = agent.sessions.create("work")
        result = await agent.save_messages(["hello work"], session=work.id)
        assert result.message is not None and result.message.text == "hello work (1 seen)"
        assert [m.text for m in agent.messages] == ["root chat", "root chat (1 seen)"]  # the root is untouched
        assert [m.text for m in work.history()] == ["hello work", "hello work (1 seen)"]
        listed = agent.sessions.list()
        assert [s.id for s in listed] == [work.id, ""]  # most recently updated first
        assert listed[0].name == "work"
        # Every session gets configure_session, with its own blocks.
        await work.replace_context_block("notes", "work only")
        assert (await agent.session.get_context_block("notes")).content == ""
        with pytest.raises(StorageError, match="no session 'nope'"):
            agent.sessions.session("nope")
        failed = await agent.save_messages(["x"], session="nope")
        assert failed.status == "error" and "no session 'nope'" in (failed.error or "")
    async with open_agent(Echo, "a", data_dir=data_dir) as agent:
        again = agent.sessions.session(work.id)
        assert [m.text for m in again.history()] == ["hello work", "hello work (1 seen)"]
        assert (await again.get_context_block("notes")).content == "work only"
        agent.sessions.rename(work.id, "office")
        assert agent.sessions.get(work.id).name == "office"  # type: ignore[union-attr]
        agent.sessions.delete(work.id)
        assert agent.sessions.get(work.id) is None and [s.id for s in agent.sessions.list()] == [""]
        with pytest.raises(StorageError, match="root session cannot be deleted"):
            agent.sessions.delete("")


async def test_fork_mid_conversation_and_continue_both_independently(data_dir: Path) -> None:
    async with open_agent(Echo, "f", data_dir=data_dir) as agent:
        for text in ["one", "two", "three"]:
            await agent.save_messages([text])
        fork_point = agent.messages[3]  # the answer to "two"
        fork = agent.sessions.fork("", at_message=fork_point.id, name="what if")
        assert [m.text for m in fork.history()] == ["one", "one (1 seen)", "two", "two (3 seen)"]
        info = agent.sessions.get(fork.id)
        assert info is not None and (info.parent_session_id, info.forked_from) == ("", fork_point.id)

        await agent.save_messages(["four"])
        await agent.save_messages(["branch"], session=fork.id)
        assert [m.text for m in agent.messages][-2:] == ["four", "four (7 seen)"]
        assert [m.text for m in fork.history()][-2:] == ["branch", "branch (5 seen)"]
        assert len(agent.messages) == 8 and len(fork.history()) == 6
        # The copies are searchable in their own session too.
        assert [h.session_id for h in fork.search("two")] == [fork.id, fork.id]
        with pytest.raises(StorageError, match="no such message"):
            agent.sessions.fork("", at_message="missing")
        with pytest.raises(StorageError, match="no session"):
            agent.sessions.fork("missing")
        assert len(agent.sessions.list()) == 2  # the failed forks created nothing
    async with open_agent(Echo, "f", data_dir=data_dir) as agent:
        assert [m.text for m in agent.sessions.session(fork.id).history()][-1] == "branch (5 seen)"


async def test_a_sessions_turn_events_do_not_reach_the_chat_clients(data_dir: Path) -> None:
    async with open_agent(Echo, "e", data_dir=data_dir) as agent:
        side = agent.sessions.create()
        root_events: list[TurnEvent] = []
        side_events: list[TurnEvent] = []

        async def on_root(event: TurnEvent) -> None:
            root_events.append(event)

        async def on_side(event: TurnEvent) -> None:
            side_events.append(event)

        agent.fanout.subscribe(on_root)
        side.fanout.subscribe(on_side)
        await agent.save_messages(["quiet"], session=side.id)
        assert root_events == []
        assert any(isinstance(e, ChunkEvent) for e in side_events)
        assert any(isinstance(e, TranscriptChanged) for e in side_events)
        await agent.add_messages(["noted"], session=side.id)
        assert [m.text for m in side.history()][-1] == "noted" and root_events == []
        assert (await agent.continue_last_turn(session=side.id)).status == "skipped"  # the last is a user's
