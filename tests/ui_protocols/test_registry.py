"""`create_app(protocols=[...])`: protocols mounted by name, each behind `on_before_connect`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

from tests.chat.live_server import serve_in_thread
from tests.server.agents import EchoChat
from think.errors import ConfigurationError
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.ui_protocols import (
    ProtocolContext,
    UIProtocol,
    _registered,
    available_protocols,
    register_protocol,
    serve_defaults,
)


def _echo_routes(context: ProtocolContext) -> list[BaseRoute]:
    async def where(request: Request) -> Response:
        admitted = await context.admit(request)
        if isinstance(admitted, Response):
            return admitted
        cls, name = admitted
        return JSONResponse({"class": cls.__name__, "name": name, "base": context.base,
                             "classes": sorted(context.classes)})

    return [Route(context.base + "/{agent}/{name}/where", context.http(where), methods=["GET", "OPTIONS"])]


@pytest.fixture
def echo_protocol() -> Iterator[str]:
    register_protocol(UIProtocol("test-echo", _echo_routes))
    yield "test-echo"
    _registered.pop("test-echo", None)


def test_an_unknown_protocol_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"unknown protocol 'nope'.*available: cf_agent, ai-sdk"):
        create_app([EchoChat], runtime=EmbeddedRuntime(tmp_path), protocols=["nope"])
    with pytest.raises(ConfigurationError, match="cannot be replaced"):
        register_protocol(UIProtocol("cf_agent", _echo_routes))


def test_the_defaults_are_what_is_installed() -> None:
    assert serve_defaults()[:2] == ["cf_agent", "ai-sdk"]
    assert set(serve_defaults()) <= set(available_protocols())


async def test_a_registered_protocol_is_mounted_before_on_request_and_asks_on_before_connect(
        tmp_path: Path, echo_protocol: str) -> None:
    asked: list[tuple[str, str, str]] = []

    def gate(conn: HTTPConnection, class_name: str, name: str) -> Response | None:
        asked.append((conn.url.path, class_name, name))
        return PlainTextResponse("no", status_code=401) if name == "locked" else None

    app = create_app([EchoChat], runtime=EmbeddedRuntime(tmp_path), on_before_connect=gate, cors=True,
                     protocols=["cf_agent", echo_protocol])
    with serve_in_thread(app) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            found = await http.get("/agents/echo-chat/r1/where", headers={"Origin": "https://x.example"})
            locked = await http.get("/agents/echo-chat/locked/where")
            unknown = await http.get("/agents/nope/r1/where")
            bad_name = await http.get("/agents/echo-chat/" + "x" * 300 + "/where")
            transcript = await http.get("/agents/echo-chat/r1/get-messages")
    assert found.json() == {"class": "EchoChat", "name": "r1", "base": "/agents", "classes": ["echo-chat"]}
    assert found.headers["access-control-allow-origin"] == "*"
    assert (locked.status_code, locked.text) == (401, "no")
    assert unknown.status_code == 400 and bad_name.status_code == 400
    assert transcript.json() == []  # cf_agent is still there
    assert ("/agents/echo-chat/locked/where", "EchoChat", "locked") in asked


async def test_without_cf_agent_there_is_no_websocket_and_no_on_request(tmp_path: Path, echo_protocol: str) -> None:
    app = create_app([EchoChat], runtime=EmbeddedRuntime(tmp_path), protocols=[echo_protocol])
    with serve_in_thread(app) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            where = await http.get("/agents/echo-chat/r1/where")
            transcript = await http.get("/agents/echo-chat/r1/get-messages")
        with pytest.raises(InvalidStatus):
            async with ws_connect(server.agent_url("echo-chat", "r1")):
                pass
    assert where.status_code == 200 and transcript.status_code == 404
    assert app.state.protocols == [echo_protocol]


async def test_by_default_create_app_serves_only_cf_agent(tmp_path: Path) -> None:
    app = create_app([EchoChat], runtime=EmbeddedRuntime(tmp_path))
    assert app.state.protocols == ["cf_agent"]
    with serve_in_thread(app) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            chat = await http.post("/agents/echo-chat/r1/chat", json={"messages": []})
    assert chat.headers.get("x-vercel-ai-ui-message-stream") is None  # reached on_request


async def test_every_agent_route_of_every_protocol_asks_on_before_connect(tmp_path: Path) -> None:
    """Each route a mounted protocol adds under an agent's address is refused by the hook before
    it does anything, whatever the method (item 4: one auth decision for every protocol)."""
    asked: list[str] = []

    def refuse(conn: HTTPConnection, class_name: str, name: str) -> Response:
        asked.append(conn.url.path)
        return PlainTextResponse("refused by the hook", status_code=401)

    names = [n for n in available_protocols() if n != "cf_agent"]
    app = create_app([EchoChat], runtime=EmbeddedRuntime(tmp_path), on_before_connect=refuse,
                     protocols=["cf_agent", *names])
    paths = [route.path for route in app.routes if isinstance(route, Route)
             and "{agent}" in route.path and "{name}" in route.path and "{rest:path}" not in route.path]
    assert any(p.endswith("/chat") for p in paths)
    with serve_in_thread(app) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            for path in paths:
                url = path.replace("{agent}", "echo-chat").replace("{name}", "r1")
                url = url.replace("{chat_id}", "c1")
                for method in ("GET", "POST"):
                    response = await http.request(method, url, json={"messages": []})
                    if response.status_code == 405:
                        continue
                    assert (response.status_code, response.text) == (401, "refused by the hook"), (method, url)
                    assert asked[-1] == url
