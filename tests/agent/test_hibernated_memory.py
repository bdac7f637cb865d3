"""A hibernated agent lets go of its transcripts at once, not at the next full collection."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from tests.agent.agents import Calculator
from think import EmbeddedRuntime


async def test_a_hibernated_agent_frees_its_transcripts_without_the_cyclic_collector(data_dir: Path) -> None:
    runtime = EmbeddedRuntime(data_dir, idle_timeout=None)
    agent = await runtime.get(Calculator, "calc")
    result = await agent.save_messages(["What is 2+3, then 5+5?"])
    assert result.status == "completed"
    other = agent.sessions.create(id="notes")
    other.add_messages(agent.messages)
    windows = [weakref.ref(agent.session._win()), weakref.ref(other._win())]
    messages = [weakref.ref(m) for m in agent.messages]  # converted for the model, too
    agent.session.compaction.view()
    assert agent.model_history.build(agent.session)[0]
    del agent, other, result
    enabled = gc.isenabled()
    gc.disable()  # the agent's own cycles keep it; what it held must go by reference counting
    try:
        assert await runtime.hibernate(Calculator, "calc")
        assert [w() for w in windows] == [None, None]
        assert [m() for m in messages] == [None] * len(messages)
    finally:
        if enabled:
            gc.enable()
    again = await runtime.get(Calculator, "calc")  # woken: everything read back
    assert [m.role for m in again.messages] == ["user", "assistant"]
    assert len(again.sessions.session("notes").history()) == 2
    await runtime.close()
