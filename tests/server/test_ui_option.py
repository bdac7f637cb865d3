"""`create_app(..., ui=True)` also serves the chat page and the info it reads."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.chat.live_server import serve_in_thread
from tests.server.agents import EchoChat, Notes
from think import Think, __version__
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.testing import ScriptedModel


async def test_the_ui_and_its_info_are_served_next_to_the_agents(tmp_path: Path) -> None:
    app = create_app([Notes, EchoChat], runtime=EmbeddedRuntime(tmp_path), ui=True)
    with serve_in_thread(app) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            info = await http.get("/_think/info")
            page = await http.get("/")
            messages = await http.get("/agents/echo-chat/default/get-messages")
    assert info.json() == {"agents": ["notes", "echo-chat"], "model": "scripted", "demo": False,
                           "version": __version__, "prefix": "agents", "browse": False,
                           "welcome": {"notes": None, "echo-chat": None},
                           "suggestions": {"notes": [], "echo-chat": []},
                           "max_attachment_bytes": {"notes": 0, "echo-chat": 5 * 1024 * 1024}}
    assert page.status_code in (200, 503) and "html" in page.headers["content-type"]  # 503: not built
    assert messages.json() == []


async def test_without_ui_there_is_no_page(tmp_path: Path) -> None:
    with serve_in_thread(create_app([EchoChat], runtime=EmbeddedRuntime(tmp_path))) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            assert (await http.get("/")).status_code == 404
            assert (await http.get("/_think/info")).status_code == 404


class UrlLabelled(Think):
    def get_model(self) -> ScriptedModel:
        # an app's own Model whose label names its endpoint, key included
        return ScriptedModel("hi", model_id="custom:https://user:sk-secret@llm.internal:8443/v1?key=sk-secret#big-model")


async def test_the_info_never_shows_a_base_url_or_a_key(tmp_path: Path) -> None:
    app = create_app([UrlLabelled], runtime=EmbeddedRuntime(tmp_path), ui=True)
    with serve_in_thread(app) as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            info = (await http.get("/_think/info")).json()
    assert info["model"] == "custom:big-model"
    assert "sk-secret" not in str(info) and "llm.internal" not in str(info)


class BadSuggestions(Think):
    suggestions = "What is 2+2?"  # a string, not a list of them

    def get_model(self) -> ScriptedModel:
        return ScriptedModel("hi")


class BadWelcome(Think):
    welcome = 42  # type: ignore[assignment]

    def get_model(self) -> ScriptedModel:
        return ScriptedModel("hi")


def test_a_bad_welcome_or_suggestions_is_refused_when_the_app_is_made(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"BadSuggestions.suggestions must be a sequence of strings"):
        create_app([BadSuggestions], runtime=EmbeddedRuntime(tmp_path), ui=True)
    with pytest.raises(TypeError, match=r"BadWelcome.welcome must be a string or None, not int"):
        create_app([BadWelcome], runtime=EmbeddedRuntime(tmp_path), ui=True)
