"""One agent, two protocols at once: a turn started over AG-UI (the official client under Node)
streams live to a WebSocket tab of the same agent, and an AG-UI run with nothing new to say
follows a turn a WebSocket tab started (its buffered chunks first, then live)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from tests.chat.live_server import LiveServer, serve_in_thread
from tests.ui_protocols.agents import ProtocolChat
from tests.ui_protocols.agui_fixtures import Drive, agui_node_fixture  # noqa: F401 - a fixture
from think.client import AgentClient
from think.runtime import EmbeddedRuntime
from think.server import create_app

AGENT = "protocol-chat"
WHOLE = "w01 w02 w03 w04 w05"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    app = create_app([ProtocolChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60),
                     protocols=["cf_agent", "ag-ui"])
    with serve_in_thread(app) as live:
        yield live


async def test_a_websocket_tab_sees_an_ag_ui_run_stream_live(agui_node: str, server: LiveServer) -> None:
    name = f"live-{secrets.token_hex(3)}"
    async with AgentClient.connect(server.agent_url(AGENT, name), turn_timeout=20, wait_timeout=10) as tab:
        run = Drive(agui_node, "gated", server.http_url(AGENT, name, "ag-ui"))
        try:
            await anyio.to_thread.run_sync(run.wait_for, "TEXT_MESSAGE_CONTENT", 3)
            # The model is held at the gate: the AG-UI run is open, and the tab has the same words.
            await tab.wait_until(lambda c: any(t.message.text.strip() == "w01 w02 w03" for t in c.turns.values()))
            assert run.proc.poll() is None
            assert "RUN_FINISHED" not in [e["event"] for e in run.seen]
            assert [m.text for m in tab.messages] == ["gated run"]  # the AG-UI user message, saved and sent
            await tab.call("open_gate")
            result = await anyio.to_thread.run_sync(run.finish)
        finally:
            run.close()
        (turn,) = tab.turns.values()
        await turn
        assert turn.outcome == "completed" and turn.message.text == WHOLE
        reply = result["reply"]
        assert reply["finished"]["outcome"] == {"type": "success"}
        assistant = reply["messages"][-1]
        assert assistant["role"] == "assistant" and assistant["content"] == WHOLE
        assert assistant["id"] == turn.message.id  # the same message, one id on both protocols
        await tab.wait_until(lambda c: [m.text for m in c.messages] == ["gated run", WHOLE])


async def test_an_ag_ui_run_with_nothing_new_follows_a_websocket_turn(agui_node: str, server: LiveServer) -> None:
    name = f"follow-{secrets.token_hex(3)}"
    async with AgentClient.connect(server.agent_url(AGENT, name), turn_timeout=20, wait_timeout=10) as tab:
        turn = await tab.send_chat("gated from the tab")
        await tab.wait_until(lambda c: turn.message.text.strip() == "w01 w02 w03")
        run = Drive(agui_node, "follow", server.http_url(AGENT, name, "ag-ui"))
        try:
            # the words streamed before the run began come from the durable buffer
            await anyio.to_thread.run_sync(run.wait_for, "TEXT_MESSAGE_CONTENT", 3)
            assert "RUN_FINISHED" not in [e["event"] for e in run.seen]
            await tab.call("open_gate")
            result = await anyio.to_thread.run_sync(run.finish)
        finally:
            run.close()
        await turn
    reply = result["reply"]
    contents = [e for e in run.seen if e["event"] == "TEXT_MESSAGE_CONTENT"]
    assert len(contents) == 5  # each word once: the replay and the live stream do not overlap
    assert reply["finished"]["outcome"] == {"type": "success"}
    assert [(m["role"], m["content"]) for m in reply["messages"]] == [("user", "gated from the tab"),
                                                                        ("assistant", WHOLE)]
    assert reply["messages"][-1]["id"] == turn.message.id
