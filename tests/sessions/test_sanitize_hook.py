"""`on_sanitize_message`: every message passes through it before it is stored, whoever wrote it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chat.agents import EchoChat
from tests.chat.live_server import LiveServer, connector, serve_in_thread
from think import Message, open_agent
from think.messages import TextPart
from think.runtime import EmbeddedRuntime
from think.server import create_app

SECRET = re.compile(r"SECRET-\d+")


class Redacting(EchoChat):
    def on_sanitize_message(self, message: Message) -> Message:
        for part in message.parts:
            if isinstance(part, TextPart):
                part.text = SECRET.sub("[redacted]", part.text)
        message.metadata = {**(message.metadata if isinstance(message.metadata, dict) else {}), "clean": True}
        return message


class RenamingIds(EchoChat):
    def on_sanitize_message(self, message: Message) -> Message:
        return message.model_copy(update={"id": "other"})


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    app = create_app([Redacting], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        yield live


async def test_a_secret_a_browser_sends_is_redacted_in_the_question_and_the_answer(
        server: LiveServer, tmp_path: Path) -> None:
    async with connector(server, "redacting")("room") as client:
        await (await client.send_chat("my key is SECRET-123"))
        texts = [(m.role, m.text) for m in client.messages]
    assert texts == [("user", "my key is [redacted]"), ("assistant", "Echo: my key is [redacted]")]
    async with open_agent(Redacting, "room", data_dir=tmp_path / "data") as agent:
        stored = agent.messages
        assert [m.text for m in stored] == ["my key is [redacted]", "Echo: my key is [redacted]"]
        assert all(isinstance(m.metadata, dict) and m.metadata.get("clean") for m in stored)
        assert "SECRET-123" not in str(agent.db.value("SELECT group_concat(body) FROM think_messages"))


async def test_messages_server_code_adds_are_sanitized_too(data_dir: Path) -> None:
    async with open_agent(Redacting, "server", data_dir=data_dir) as agent:
        mine = Message.user("SECRET-7 here")
        stored = await agent.add_messages([mine])
        assert stored[0].text == "[redacted] here" and agent.messages[0].text == "[redacted] here"
        assert mine.text == "SECRET-7 here"  # the caller's object is left alone


async def test_a_sanitizer_that_changes_the_id_is_refused_and_nothing_is_stored(data_dir: Path) -> None:
    async with open_agent(RenamingIds, "ids", data_dir=data_dir) as agent:
        with pytest.raises(TypeError, match="on_sanitize_message"):
            await agent.add_messages([Message.user("hi")])
        assert agent.messages == []
