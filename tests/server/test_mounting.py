"""The app mounts inside a larger Starlette app, whose lifespan does not run ours."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from tests.chat.live_server import serve_in_thread
from tests.server.agents import EchoChat
from think.client import AgentClient
from think.runtime import EmbeddedRuntime
from think.server import create_app


async def test_a_mounted_app_serves_chat(tmp_path: Path) -> None:
    agents = create_app([EchoChat], runtime=EmbeddedRuntime(tmp_path))
    parent = Starlette(routes=[Route("/", lambda request: PlainTextResponse("home")), Mount("/chat", app=agents)])
    with serve_in_thread(parent) as server:
        async with AgentClient.connect(server.ws_base_url + "/chat/agents/echo-chat/room") as client:
            turn = await (await client.send_chat("mounted"))
            assert turn.outcome == "completed" and turn.text == "Echo: mounted"
            assert [m.text for m in await client.get_messages()] == ["mounted", "Echo: mounted"]
