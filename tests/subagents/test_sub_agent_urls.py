"""Sub-agents over the wire: the parent's clients see the child's answer stream as
`agent-tool-event` frames, and a browser can talk to the child at its sub-URL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from tests.chat.live_server import LiveServer, serve_in_thread
from tests.subagents.agents import Lead, Researcher
from think.client import AgentClient
from think.messages import Message
from think.protocol.client_codec import encode_client_frame
from think.protocol.frames import ChatRequest, RpcRequest
from think.runtime import EmbeddedRuntime
from think.server import create_app


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    app = create_app([Lead], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        yield live


async def frames_until(socket: ClientConnection, done: Any) -> list[dict[str, Any]]:
    """Every JSON frame until (and including) the one `done(frame)` accepts."""
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(10):
        while True:
            frame = orjson.loads(await socket.recv())
            seen.append(frame)
            if done(frame):
                return seen


def child_text(frames: list[dict[str, Any]]) -> str:
    bodies = [orjson.loads(f["event"]["body"]) for f in frames
              if f["type"] == "agent-tool-event" and f["event"]["kind"] == "chunk"]
    return "".join(b["delta"] for b in bodies if b["type"] == "text-delta")


async def test_a_delegated_child_streams_its_answer_to_the_parents_sockets(server: LiveServer) -> None:
    async with ws_connect(server.agent_url("lead", "boss")) as watcher, \
            ws_connect(server.agent_url("lead", "boss")) as caller:
        await caller.send(encode_client_frame(RpcRequest(id="call-1", method="delegate", args=("volcanoes",))))
        answer = await frames_until(caller, lambda f: f["type"] == "rpc" and f.get("done"))
        seen = await frames_until(watcher, lambda f: f["type"] == "agent-tool-event"
                                  and f["event"]["kind"] == "finished")
    result = answer[-1]["result"]
    assert result["status"] == "completed" and result["output"] == "Findings on volcanoes: it is well studied."
    events = [f for f in seen if f["type"] == "agent-tool-event"]
    assert events[0]["event"]["kind"] == "started" and len(events) >= 4
    assert [e["sequence"] for e in events] == list(range(len(events)))
    assert child_text(events) == result["output"]  # a second tab saw the child's answer as it streamed
    assert {e["event"]["runId"] for e in events} == {result["runId"]}


async def test_an_agent_tool_in_a_chat_turn_streams_with_its_tool_call_id(server: LiveServer) -> None:
    async with ws_connect(server.agent_url("lead", "chat")) as socket:
        request = ChatRequest(id="turn-1", messages=[Message.user("glaciers")])
        await socket.send(encode_client_frame(request))
        frames = await frames_until(socket, lambda f: f["type"] == "cf_agent_use_chat_response" and f.get("done"))
    events = [f for f in frames if f["type"] == "agent-tool-event"]
    calls = [orjson.loads(f["body"]) for f in frames if f["type"] == "cf_agent_use_chat_response" and f.get("body")]
    call_id = next(c["toolCallId"] for c in calls if c.get("type") == "tool-input-available")
    assert events and all(e["parentToolCallId"] == call_id for e in events)
    assert child_text(events) == "Findings on glaciers: it is well studied."
    # The child's chunks arrive before the parent's tool output (they stream during the call).
    order = [f["type"] if f["type"] == "agent-tool-event" else orjson.loads(f["body"]).get("type")
             for f in frames if f["type"] == "agent-tool-event" or (f["type"] == "cf_agent_use_chat_response"
                                                                   and f.get("body"))]
    assert order.index("agent-tool-event") < order.index("tool-output-available")


async def test_a_browser_talks_to_a_child_at_its_sub_url(server: LiveServer) -> None:
    async with AgentClient.connect(server.agent_url("lead", "boss"), call_timeout=10) as parent:
        run = await parent.call("delegate", "deserts")
    sub_url = server.agent_url("lead", "boss") + f"/sub/researcher/{run['runId']}"
    async with AgentClient.connect(sub_url, turn_timeout=10) as child:
        assert child.identity is not None and child.identity.agent == "researcher"
        assert [m.text for m in child.messages] == ["deserts", "Findings on deserts: it is well studied."]
        turn = await child.send_chat("oceans")
        await turn
        assert turn.outcome == "completed" and turn.message is not None
        assert turn.message.text == "Findings on oceans: it is well studied."
    async with httpx.AsyncClient() as http:
        stored = await http.get(server.http_url("lead", "boss", f"sub/researcher/{run['runId']}/get-messages"))
        assert stored.status_code == 200 and len(stored.json()) == 4
        parent_messages = await http.get(server.http_url("lead", "boss", "get-messages"))
        assert parent_messages.json() == []  # the child's conversation is not the parent's


@pytest.mark.parametrize("path", ["sub/researcher/never-created", "sub/unknown-class/x", "sub/researcher", "sub"])
async def test_unknown_sub_agents_are_404(server: LiveServer, path: str) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.get(server.http_url("lead", "boss", f"{path}/get-messages"))
    assert response.status_code == 404
    assert "sub-agent" in response.text.lower()
    with pytest.raises(Exception, match="404"):
        async with ws_connect(server.agent_url("lead", "boss") + f"/{path}"):
            pass


def test_the_child_class_is_found_again_after_a_restart(tmp_path: Path) -> None:
    """The parent records the child's class path: a new process (no `sub_agent()` call yet) routes it."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    script = (
        "import anyio\n"
        "from think.runtime import EmbeddedRuntime\n"
        "from tests.subagents.agents import Lead\n"
        "async def main():\n"
        f"    runtime = EmbeddedRuntime({str(tmp_path)!r}, idle_timeout=None)\n"
        "    parent = await runtime.get(Lead, 'boss')\n"
        "    exists, cls = parent.sub_agents.lookup('researcher', 'r9')\n"
        "    print(exists, cls and cls.__name__)\n"
        "    await runtime.close()\n"
        "anyio.run(main)\n"
    )

    async def create() -> None:
        runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
        parent = await runtime.get(Lead, "boss")
        await parent.sub_agent(Researcher, "r9")
        await runtime.close()

    anyio.run(create)
    out = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60,
                         check=True)
    assert out.stdout.strip() == "True Researcher"
