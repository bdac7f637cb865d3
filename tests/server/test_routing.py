"""Addresses: `/<prefix>/<kebab-class>/<name>[/…]` reaches the agent; anything else is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

from tests.chat.helpers import describe
from tests.chat.live_server import LiveServer, serve_in_thread
from tests.server.agents import Broken, EchoChat, FailsToStart, Notes
from think.client import AgentClient
from think.protocol.frames import ServerFrame
from think.runtime import EmbeddedRuntime
from think.server import create_app


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    app = create_app([EchoChat, Notes, Broken, FailsToStart], runtime=EmbeddedRuntime(tmp_path, idle_timeout=60),
                     prefix="/api/agents/")
    with serve_in_thread(app) as live:
        yield live


async def get(server: LiveServer, path: str, method: str = "GET", **kwargs: object) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        return await http.request(method, path, **kwargs)  # type: ignore[arg-type]


async def test_http_paths(server: LiveServer) -> None:
    unknown = await get(server, "/api/agents/no-such-agent/room/get-messages")
    assert (unknown.status_code, unknown.text) == (400, "Invalid request")
    assert (await get(server, "/agents/echo-chat/room/get-messages")).status_code == 404  # not our prefix
    assert (await get(server, "/api/agents/echo-chat")).status_code == 404
    bare = await get(server, "/api/agents/echo-chat/room")
    assert (bare.status_code, bare.text) == (404, "Not implemented")  # the default on_request
    assert (await get(server, "/api/agents/echo-chat/room/get-messages")).json() == []
    assert (await get(server, "/api/agents/echo-chat/room/deep/path/get-messages", "DELETE")).json() == []
    assert (await get(server, "/api/agents/echo-chat/room/sub/child/c1")).status_code == 404
    bad_name = await get(server, "/api/agents/echo-chat/bad%01name/get-messages")
    assert bad_name.status_code == 400 and "control characters" in bad_name.text


async def test_other_paths_go_to_on_request(server: LiveServer) -> None:
    response = await get(server, "/api/agents/notes/n1/anything/else?x=1", "POST", content=b"hello")
    assert response.json() == {"agent": "n1", "path": "/api/agents/notes/n1/anything/else", "method": "POST",
                               "body": "hello"}
    assert (await get(server, "/api/agents/notes/n1/get-messages")).status_code == 200  # not a chat agent: its own
    assert (await get(server, "/api/agents/broken/b1/x")).status_code == 500
    assert (await get(server, "/api/agents/fails-to-start/f1/x")).status_code == 500


async def test_sockets_to_unknown_or_broken_agents_are_refused_before_the_upgrade(server: LiveServer) -> None:
    for path, status in [("/api/agents/no-such-agent/room", 400), ("/api/agents/fails-to-start/f1", 500),
                         ("/api/agents/echo-chat/room/sub/child/c1", 404)]:
        with pytest.raises(InvalidStatus) as refused:
            async with ws_connect(server.ws_base_url + path):
                pass
        assert refused.value.response.status_code == status


async def test_a_plain_agent_serves_state_and_rpc_without_chat(server: LiveServer) -> None:
    url = server.ws_base_url + "/api/agents/notes/n2"
    async with AgentClient.connect(url, wait_timeout=5) as a, AgentClient.connect(url, wait_timeout=5) as b:
        assert a.identity is not None and a.identity.agent == "notes" and a.messages == []
        assert a.state == {"notes": []}
        assert await a.call("add_note", "first") == 1
        await b.wait_until(lambda c: c.state == {"notes": ["first"]})
        await a.send_text('{"type":"cf_agent_chat_clear"}')
        await a.wait_until(lambda c: bool(c.errors))
        assert a.errors == ["Notes is not a chat agent"]


async def test_the_connection_id_is_pk_verbatim(server: LiveServer) -> None:
    """Two sockets with one `_pk` are one connection id: neither is sent the other's user message."""
    url = server.ws_base_url + "/api/agents/echo-chat/pk"
    frames: list[ServerFrame] = []
    async with AgentClient.connect(url, connection_id="tab-a", wait_timeout=5) as a, \
            AgentClient.connect(url, connection_id="tab-a", on_frame=frames.append, wait_timeout=5) as b:
        assert a.ws_url.endswith("?_pk=tab-a")
        mark = len(frames)
        turn = await (await a.send_chat("hi"))
        await b.turn(turn.request_id)
        assert describe(frames[mark]) == ("start", 0)  # no ("messages", 1) first: b counts as the sender
        assert b.message_count == 2
