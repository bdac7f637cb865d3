"""A new socket gets exactly the frames the TypeScript server sends, in the same order."""

from __future__ import annotations

from websockets.asyncio.client import connect as ws_connect

from tests.chat.conftest import Connect
from tests.chat.live_server import LiveServer

IDLE_GREETING = [
    '{"type":"cf_agent_chat_messages","messages":[],"connect":true}',
    '{"type":"cf_agent_identity","name":"room-1","agent":"echo-chat"}',
    '{"mcp":{"prompts":[],"resources":[],"servers":{},"tools":[]},"type":"cf_agent_mcp_servers"}',
    '{"type":"cf_agent_stream_resume_none","reason":"idle","probeId":"KUglY-8c"}',
]


async def test_an_idle_agent_answers_the_probe_with_the_observed_frames(server: LiveServer) -> None:
    async with ws_connect(server.agent_url("echo-chat", "room-1") + "?_pk=tab-1") as ws:
        await ws.send('{"type":"cf_agent_stream_resume_request","probeId":"KUglY-8c"}')
        assert [await ws.recv() for _ in IDLE_GREETING] == IDLE_GREETING
        # Nothing else was queued: the next frame is the answer to the next probe.
        await ws.send('{"type":"cf_agent_stream_resume_request","probeId":"second"}')
        assert await ws.recv() == '{"type":"cf_agent_stream_resume_none","reason":"idle","probeId":"second"}'


async def test_an_agent_with_state_sends_it_between_identity_and_mcp(server: LiveServer) -> None:
    async with ws_connect(server.agent_url("stateful-chat", "s1")) as ws:
        await ws.send('{"type":"cf_agent_stream_resume_request","probeId":"p"}')
        got = [await ws.recv() for _ in range(5)]
    assert got == [
        '{"type":"cf_agent_chat_messages","messages":[],"connect":true}',
        '{"type":"cf_agent_identity","name":"s1","agent":"stateful-chat"}',
        '{"state":{"count":0},"type":"cf_agent_state"}',
        '{"mcp":{"prompts":[],"resources":[],"servers":{},"tools":[]},"type":"cf_agent_mcp_servers"}',
        '{"type":"cf_agent_stream_resume_none","reason":"idle","probeId":"p"}',
    ]


async def test_the_client_handshake_sees_the_identity_and_the_transcript(connect: Connect) -> None:
    async with connect("room-2") as first:
        await first.send_chat("hello")
        await first.turn(next(iter(first.turns))).wait()
    async with connect("room-2") as client:
        assert client.identity is not None and (client.identity.name, client.identity.agent) == ("room-2", "echo-chat")
        assert [m.text for m in client.messages] == ["hello", "Echo: hello"]
        assert client.mcp == {"prompts": [], "resources": [], "servers": {}, "tools": []}
        assert client.resumed is None and client.state is None
