"""A tab that connects while a turn streams is offered the stream, replays it, then follows it live."""

from __future__ import annotations

from websockets.asyncio.client import connect as ws_connect

from tests.chat.conftest import Connect
from tests.chat.live_server import LiveServer


async def test_joining_mid_turn_replays_the_stream_then_goes_live(server: LiveServer, connect: Connect) -> None:
    async with connect("join") as a:
        turn = await a.send_chat("gated please", request_id="TJEe0rC6")
        await a.wait_until(lambda c: turn.text == "w01 w02 w03 ")
        message_id = turn.message.id
        async with ws_connect(server.agent_url("echo-chat", "join")) as b:
            await b.send('{"type":"cf_agent_stream_resume_request","probeId":"RVgf-ymg"}')
            assert [await b.recv() for _ in range(4)] == [
                '{"type":"cf_agent_stream_resuming","id":"TJEe0rC6"}',  # no transcript: it would clobber
                '{"type":"cf_agent_identity","name":"join","agent":"echo-chat"}',
                '{"mcp":{"prompts":[],"resources":[],"servers":{},"tools":[]},"type":"cf_agent_mcp_servers"}',
                '{"type":"cf_agent_stream_resuming","id":"TJEe0rC6","probeId":"RVgf-ymg"}',
            ]
            await b.send('{"type":"cf_agent_stream_resume_ack","id":"TJEe0rC6"}')

            def replayed(seq: int, body: str) -> str:
                return ('{"body":' + body + ',"done":false,"id":"TJEe0rC6","type":"cf_agent_use_chat_response",'
                        f'"replay":true,"seq":{seq}}}')

            assert [await b.recv() for _ in range(7)] == [
                replayed(0, '"{\\"type\\":\\"start\\",\\"messageId\\":\\"' + message_id + '\\"}"'),
                replayed(1, '"{\\"type\\":\\"start-step\\"}"'),
                replayed(2, '"{\\"type\\":\\"text-start\\",\\"id\\":\\"txt-0\\"}"'),
                replayed(3, '"{\\"type\\":\\"text-delta\\",\\"id\\":\\"txt-0\\",\\"delta\\":\\"w01 \\"}"'),
                replayed(4, '"{\\"type\\":\\"text-delta\\",\\"id\\":\\"txt-0\\",\\"delta\\":\\"w02 \\"}"'),
                replayed(5, '"{\\"type\\":\\"text-delta\\",\\"id\\":\\"txt-0\\",\\"delta\\":\\"w03 \\"}"'),
                '{"body":"","done":false,"id":"TJEe0rC6","type":"cf_agent_use_chat_response","replay":true,'
                '"replayComplete":true}',
            ]
            await a.call("open_gate")
            live = [await b.recv(decode=True) for _ in range(7)]
            assert live[0] == ('{"type":"cf_agent_use_chat_response","id":"TJEe0rC6","body":"{\\"type\\":'
                               '\\"text-delta\\",\\"id\\":\\"txt-0\\",\\"delta\\":\\"w04 \\"}","done":false,"seq":6}')
            assert [f'"seq":{n}' in frame for n, frame in zip(range(6, 11), live, strict=False)] == [True] * 5
            assert live[5].startswith('{"type":"cf_agent_chat_messages","messages":[')
            user_id = a.messages[0].id
            assert live[6] == ('{"type":"cf_agent_use_chat_response","id":"TJEe0rC6","body":"","done":true,'
                               f'"outcome":"completed","messageIds":["{user_id}"]}}')
        assert (await turn).text == "w01 w02 w03 w04 w05"


async def test_the_python_client_resumes_a_running_turn(connect: Connect) -> None:
    async with connect("resume") as a:
        turn = await a.send_chat("gated again")
        await a.wait_until(lambda c: turn.text == "w01 w02 w03 ")
        async with connect("resume") as b:
            assert b.resumed is not None and b.resumed.request_id == turn.request_id
            await b.wait_until(lambda c: c.resumed is not None and c.resumed.text == "w01 w02 w03 ")
            await b.call("open_gate")
            resumed = await b.resumed
            assert resumed.outcome == "completed" and resumed.replayed
            assert resumed.message == (await turn).message
            assert [m.text for m in b.messages] == ["gated again", "w01 w02 w03 w04 w05"]


async def test_a_turn_keeps_running_when_its_tab_closes(connect: Connect) -> None:
    async with connect("orphan") as a:
        turn = await a.send_chat("gated and gone")
        await a.wait_until(lambda c: turn.text == "w01 w02 w03 ")
    async with connect("orphan") as b:
        assert b.resumed is not None
        await b.call("open_gate")
        assert (await b.resumed).outcome == "completed"
        assert [m.text for m in await b.get_messages()] == ["gated and gone", "w01 w02 w03 w04 w05"]
