"""The agents browser over HTTP, on a real uvicorn server: off by default, a token, a hook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse

from tests.browse.agents import Counter, Notes
from tests.chat.live_server import serve_in_thread
from think.runtime import EmbeddedRuntime
from think.server import create_app

Filled = tuple[Path, dict[str, list[str]]]


async def test_production_apps_serve_no_browser_unless_asked(filled: Filled) -> None:
    data_dir, _ = filled
    with serve_in_thread(create_app([Notes], runtime=EmbeddedRuntime(data_dir))) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            for path in ("/_think/agents", "/_think/agents/notes", "/_think/agents/notes/alice"):
                assert (await http.get(path)).status_code == 404


async def test_agents_instances_and_transcripts_are_listed(filled: Filled, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THINK_BROWSE_TOKEN", raising=False)
    data_dir, ids = filled
    runtime = EmbeddedRuntime(data_dir)
    app = create_app([Notes, Counter], runtime=runtime, browse=True)
    with serve_in_thread(app) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            agents = (await http.get("/_think/agents")).json()
            notes = (await http.get("/_think/agents/notes")).json()
            bob = (await http.get("/_think/agents/notes/bob")).json()
            other = (await http.get("/_think/agents/notes/bob", params={"branch": ids["answers"][0]})).json()
            unknown = await http.get("/_think/agents/nobody")
            missing = await http.get("/_think/agents/notes/zed")
            assert runtime.live() == []  # every agent stayed hibernated: the listing woke none
    assert [(a["agent"], a["instances"]) for a in agents["agents"]] == [("counter", 1), ("notes", 3)]
    by_name = {i["name"]: i for i in notes["instances"]}
    assert (by_name["alice"]["title"], by_name["alice"]["messages"]) == ("Plan the offsite", 4)
    assert isinstance(by_name["alice"]["last_activity"], float)
    assert bob["active"] is True
    assert [m["role"] for m in bob["messages"]] == ["user", "assistant"]
    assert bob["messages"][1]["branches"] == ids["answers"] and bob["messages"][1]["branch"] == 2
    assert other["active"] is False and other["messages"][1]["id"] == ids["answers"][0]
    assert unknown.status_code == 404 and "no agent 'nobody'" in unknown.json()["error"]
    assert missing.status_code == 404 and "no instance 'zed'" in missing.json()["error"]


async def test_a_token_is_required_when_set(filled: Filled, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir, _ = filled
    monkeypatch.setenv("THINK_BROWSE_TOKEN", "s3cret-token")
    app = create_app([Notes], runtime=EmbeddedRuntime(data_dir), browse=True)
    with serve_in_thread(app) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            none = await http.get("/_think/agents")
            wrong = await http.get("/_think/agents/notes", headers={"Authorization": "Bearer nope"})
            right = await http.get("/_think/agents/notes", headers={"Authorization": "Bearer s3cret-token"})
    assert none.status_code == wrong.status_code == 401
    assert none.headers["www-authenticate"] == "Bearer"
    assert right.status_code == 200 and len(right.json()["instances"]) == 3


async def test_the_on_browse_hook_decides_like_on_before_connect(filled: Filled,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THINK_BROWSE_TOKEN", raising=False)
    data_dir, _ = filled
    asked: list[tuple[str | None, str | None]] = []

    def on_browse(request: HTTPConnection, agent: str | None, name: str | None) -> Any:
        asked.append((agent, name))
        if request.headers.get("x-user") != "admin":
            return PlainTextResponse("admins only", status_code=403)
        if name == "bob":
            return False
        if name == "alice":
            raise RuntimeError("a bug in the hook")
        return None

    app = create_app([Notes], runtime=EmbeddedRuntime(data_dir), browse=True, on_browse=on_browse)
    admin = {"x-user": "admin"}
    with serve_in_thread(app) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            stranger = await http.get("/_think/agents")
            listing = await http.get("/_think/agents", headers=admin)
            bob = await http.get("/_think/agents/notes/bob", headers=admin)
            alice = await http.get("/_think/agents/notes/alice", headers=admin)
    assert (stranger.status_code, stranger.text) == (403, "admins only")
    assert listing.status_code == 200
    assert bob.status_code == 403 and alice.status_code == 403  # refused, and a raising hook refuses too
    assert asked == [(None, None), (None, None), ("notes", "bob"), ("notes", "alice")]
