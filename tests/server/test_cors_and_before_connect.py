"""CORS on HTTP, and `on_before_connect` refusing sockets and requests before anything runs."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse, Response
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

from tests.chat.live_server import serve_in_thread
from tests.server.agents import EchoChat
from think.client import AgentClient
from think.runtime import EmbeddedRuntime
from think.server import create_app


async def test_cors_true_allows_every_origin_on_http(tmp_path: Path) -> None:
    app = create_app([EchoChat], runtime=EmbeddedRuntime(tmp_path), cors=True)
    with serve_in_thread(app) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            preflight = await http.options("/agents/echo-chat/r/get-messages", headers={
                "Origin": "https://x.example", "Access-Control-Request-Method": "GET"})
            got = await http.get("/agents/echo-chat/r/get-messages", headers={"Origin": "https://x.example"})
            unknown = await http.get("/agents/nope/r/get-messages", headers={"Origin": "https://x.example"})
    assert preflight.status_code == 204
    assert {k: preflight.headers[k] for k in ("access-control-allow-origin", "access-control-allow-methods",
                                              "access-control-allow-headers", "access-control-max-age")} == {
        "access-control-allow-origin": "*", "access-control-allow-methods": "GET, POST, HEAD, OPTIONS",
        "access-control-allow-headers": "*", "access-control-max-age": "86400"}
    assert got.headers["access-control-allow-origin"] == "*" and got.json() == []
    assert unknown.status_code == 400 and unknown.headers["access-control-allow-origin"] == "*"


async def test_cors_with_a_list_allows_only_those_origins(tmp_path: Path) -> None:
    app = create_app([EchoChat], runtime=EmbeddedRuntime(tmp_path), cors=["https://good.example"])
    with serve_in_thread(app) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            good = await http.get("/agents/echo-chat/r/get-messages", headers={"Origin": "https://good.example"})
            bad = await http.get("/agents/echo-chat/r/get-messages", headers={"Origin": "https://bad.example"})
    assert good.headers["access-control-allow-origin"] == "https://good.example" and good.headers["vary"] == "Origin"
    assert "access-control-allow-origin" not in bad.headers


async def test_without_cors_there_are_no_cors_headers(tmp_path: Path) -> None:
    with serve_in_thread(create_app([EchoChat], runtime=EmbeddedRuntime(tmp_path))) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            got = await http.get("/agents/echo-chat/r/get-messages", headers={"Origin": "https://x.example"})
            options = await http.options("/agents/echo-chat/r")
    assert "access-control-allow-origin" not in got.headers
    assert (options.status_code, options.text) == (404, "Not implemented")  # OPTIONS reaches on_request


async def test_on_before_connect_can_refuse_sockets_and_requests(tmp_path: Path) -> None:
    seen: list[tuple[str, str, str]] = []

    async def gate(conn: HTTPConnection, class_name: str, name: str) -> Response | None:
        seen.append((conn.scope["type"], class_name, name))
        if name == "private":
            return PlainTextResponse("Private room", status_code=403)
        if conn.query_params.get("token") == "bad":
            raise HTTPException(401, "Bad token")
        return None

    with serve_in_thread(create_app([EchoChat], runtime=EmbeddedRuntime(tmp_path), on_before_connect=gate)) as server:
        with pytest.raises(InvalidStatus) as refused:
            async with ws_connect(server.agent_url("echo-chat", "private")):
                pass
        assert refused.value.response.status_code == 403 and refused.value.response.body == b"Private room"
        with pytest.raises(InvalidStatus) as unauthorized:
            async with ws_connect(server.agent_url("echo-chat", "open") + "?token=bad"):
                pass
        assert unauthorized.value.response.status_code == 401
        async with AgentClient.connect(server.agent_url("echo-chat", "open") + "?token=good") as client:
            assert client.identity is not None
            assert (await client.get_messages()) == []  # the token is kept for HTTP calls
        async with httpx.AsyncClient() as http:
            private = await http.get(server.http_url("echo-chat", "private", "get-messages"))
    assert (private.status_code, private.text) == (403, "Private room")
    assert ("websocket", "EchoChat", "private") in seen and ("http", "EchoChat", "open") in seen


def test_create_app_refuses_a_configuration_that_cannot_work(tmp_path: Path) -> None:
    from think.errors import ConfigurationError

    class Sub(EchoChat):
        agent_class_name = "sub"

    class Twin(EchoChat):
        agent_class_name = "echo-chat"

    for agents, options, message in [
        ([], {}, "at least one agent class"),
        ([object], {}, "is not an Agent class"),
        ([Sub], {}, "'sub' is reserved"),
        ([EchoChat, Twin], {}, "both serve /echo-chat/"),
        ([EchoChat], {"max_frame_bytes": 10}, "max_frame_bytes"),
        ([EchoChat], {"runtime": EmbeddedRuntime(tmp_path), "data_dir": tmp_path}, "not both"),
    ]:
        with pytest.raises(ConfigurationError, match=message):
            create_app(agents, **options)  # type: ignore[arg-type]
