"""A reconnecting tab gets the history over the socket and over HTTP `get-messages`."""

from __future__ import annotations

import httpx
import orjson

from tests.chat.conftest import Connect
from tests.chat.live_server import LiveServer


async def test_history_comes_back_on_the_socket_and_over_http(server: LiveServer, connect: Connect) -> None:
    async with connect("history") as client:
        for text in ("one", "two"):
            await (await client.send_chat(text))
        before = [m.to_json() for m in client.messages]
    assert [m["role"] for m in before] == ["user", "assistant", "user", "assistant"]

    async with connect("history") as again:
        assert [m.to_json() for m in again.messages] == before
        assert [m.to_json() for m in await again.get_messages()] == before

    async with httpx.AsyncClient() as http:
        response = await http.get(server.http_url("echo-chat", "history", "get-messages"))
        posted = await http.post(server.http_url("echo-chat", "history", "get-messages"))
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    assert orjson.loads(response.content) == before
    assert posted.content == response.content  # any method


async def test_an_agent_nobody_talked_to_has_an_empty_history(server: LiveServer) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.get(server.http_url("echo-chat", "never-used", "get-messages"))
    assert (response.status_code, response.content) == (200, b"[]")
