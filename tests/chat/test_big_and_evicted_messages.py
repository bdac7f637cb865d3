"""Over a real server and socket: a 5 MB tool output reaches every tab whole, and an aged image
becomes a marker in every tab's transcript (`think.sessions.rows`, `think.sessions.eviction`)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.chat.live_server import LiveServer, connector, serve_in_thread
from think import Message, Think, tool
from think.messages import FilePart, TextPart
from think.models.base import ModelRequest
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.testing.models import Reply, ScriptedModel, call

LOG = "".join(f"build step {i:06d}: ok ✓\n" for i in range(230_000))
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
                       "RU5ErkJggg==")


@tool
def build_log() -> str:
    """The whole build log."""
    return LOG


def answer(request: ModelRequest) -> Reply:
    if request.last_user_text == "log" and request.messages[-1].role == "user":
        return [call("build_log")]
    return f"read {request.last_user_text}"


class BigChat(Think):
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(answer)

    def get_tools(self) -> list[Any]:
        return [build_log]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    app = create_app([BigChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        yield live


async def test_a_big_output_and_an_evicted_image_reach_every_tab(server: LiveServer) -> None:
    connect = connector(server, "big-chat")
    photo = Message(id="photo", role="user", parts=[
        TextPart(text="look"),
        FilePart(media_type="image/png", url="data:image/png;base64," + base64.b64encode(PNG).decode(),
                 filename="dot.png")])
    async with connect("room", turn_timeout=60) as tab:
        await (await tab.send_chat(photo))
        await (await tab.send_chat("log"))
        for i in range(4):
            await (await tab.send_chat(f"q{i}"))
        seen_by_first = [m.to_json() for m in tab.messages]
    async with connect("room") as other:
        transcript = [m.to_json() for m in other.messages]
    assert transcript == seen_by_first
    assert transcript[0]["parts"] == [{"type": "text", "text": "look"}, {
        "type": "text", "text": f"[evicted image/png, {len(PNG)} bytes; preserved at /attachments/photo/1-dot.png]"
        .replace(f"{len(PNG)} bytes", f"{len(PNG):,} bytes")}]
    outputs = [p.get("output") for m in transcript for p in m["parts"] if p["type"] == "tool-build_log"]
    assert outputs == [LOG]
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.get(server.http_url("big-chat", "room", "get-messages"))
    assert orjson.loads(response.content) == transcript
