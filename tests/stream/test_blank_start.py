"""A brand-new agent's first turn skips what its blank database cannot hold (a terminal record,
streams to sweep); an agent reopened on a used database still clears and sweeps them."""

from __future__ import annotations

from pathlib import Path

from think import EmbeddedRuntime, Think
from think.testing.models import ScriptedModel


class Echo(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: "Noted.")


async def _first_turn_statements(runtime: EmbeddedRuntime, name: str) -> list[str]:
    agent = await runtime.get(Echo, name)
    seen: list[str] = []
    agent.db.connection.set_trace_callback(seen.append)
    try:
        assert (await agent.save_messages(["Hello"])).status == "completed"
    finally:
        agent.db.connection.set_trace_callback(None)
    return [" ".join(sql.split()) for sql in seen]


async def test_a_new_agents_first_turn_neither_clears_a_terminal_record_nor_sweeps(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    try:
        statements = await _first_turn_statements(runtime, "new")
    finally:
        await runtime.close()
    assert not [s for s in statements if s.startswith("DELETE FROM think_stream_terminal")]
    assert not [s for s in statements if s.startswith("SELECT request_id FROM think_streams")]


async def test_a_reopened_agent_still_clears_the_last_failure_and_sweeps_old_streams(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Echo, "used")
    await agent.save_messages(["Hello"])
    agent.streams.set_terminal("an-earlier-request", "The turn failed.")  # what a failed turn leaves
    agent.db.sql("INSERT INTO think_streams (request_id, status, continuation, message_id, created_at, completed_at) "
                 "VALUES ('long-ago', 'completed', 0, NULL, 1.0, 2.0)")  # finished long past its retention
    await runtime.close()

    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    try:
        statements = await _first_turn_statements(runtime, "used")
        agent = await runtime.get(Echo, "used")
        assert agent.streams.terminal is None  # the successful turn cleared it
        assert agent.db.value("SELECT count(*) FROM think_streams WHERE request_id = 'long-ago'") == 0  # swept
    finally:
        await runtime.close()
    assert [s for s in statements if s.startswith("DELETE FROM think_stream_terminal")]
