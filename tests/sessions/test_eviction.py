"""Media eviction (`Think.media_eviction`): images older than the recent messages leave the
transcript for workspace files, a marker naming the file stays; model and clients see a valid
transcript, and the bytes are still in the workspace."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from think import Message, Think, open_agent
from think.messages import FilePart, TextPart
from think.models.base import FileContent, ModelRequest, TextContent, UserMessage
from think.sessions import MIGRATIONS, Session
from think.sessions.eviction import MediaEviction, MediaEvictor
from think.storage import Database, migrate
from think.testing import ScriptedModel
from think.workspace.workspace import MIGRATIONS as WORKSPACE_MIGRATIONS
from think.workspace.workspace import Workspace

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
                       "RU5ErkJggg==")
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 8


def data_url(data: bytes, media_type: str) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


class Looking(Think):
    """Answers with how many files the model was given in the whole request."""

    requests: list[ModelRequest]

    def get_model(self) -> ScriptedModel:
        def reply(request: ModelRequest) -> str:
            type(self).requests.append(request)
            files = [c for m in request.messages if isinstance(m, UserMessage)
                     for c in m.content if isinstance(c, FileContent)]
            return f"files: {len(files)}"

        return ScriptedModel(reply)


def user_texts(request: ModelRequest) -> list[str]:
    return [c.text for m in request.messages if isinstance(m, UserMessage) for c in m.content
            if isinstance(c, TextContent)]


async def test_an_aged_image_becomes_a_marker_and_stays_in_the_workspace(data_dir: Path) -> None:
    Looking.requests = []
    photo = Message(id="u1", role="user", parts=[TextPart(text="What is this?"),
                                                 FilePart(media_type="image/png", url=data_url(PNG, "image/png"),
                                                          filename="dot.png")])
    async with open_agent(Looking, "looking", data_dir=data_dir) as agent:
        await agent.save_messages(photo)
        # An image a tool or the application stored inline, in an assistant message.
        agent.session.add_messages([Message(id="drawn", role="assistant", parts=[
            TextPart(text="Here is a sketch."), FilePart(media_type="image/jpeg", url=data_url(JPEG, "image/jpeg"))])])
        answers = []
        for i in range(5):
            result = await agent.save_messages(f"question {i}")
            answers.append(result.message.text if result.message else "")
        # The photo is sent while it is among the newest 8 messages, then no more.
        assert answers == ["files: 1"] * 3 + ["files: 0"] * 2
        first = agent.session.get_message("u1")
        assert first is not None and [p.type for p in first.parts] == ["text", "text"]
        assert first.parts[1] == TextPart(
            text=f"[evicted image/png, {len(PNG):,} bytes; preserved at /attachments/u1/1-dot.png]")
        assert await agent.workspace.read_bytes("/attachments/u1/1-dot.png") == PNG
        drawn = agent.session.get_message("drawn")
        assert drawn is not None
        assert drawn.parts[1] == TextPart(
            text=f"[evicted image/jpeg, {len(JPEG):,} bytes; preserved at /attachments/evicted/drawn-1.jpeg]")
        assert await agent.workspace.read_bytes("/attachments/evicted/drawn-1.jpeg") == JPEG
        last = Looking.requests[-1]
        assert any("preserved at /attachments/u1/1-dot.png" in t for t in user_texts(last))
        transcript = agent.session.history_json()
    async with open_agent(Looking, "looking", data_dir=data_dir) as agent:  # what a client loads
        reloaded = [Message.model_validate_json(body) for body in agent.session.history_json()]
        assert [m.dumps() for m in reloaded] == transcript
        assert not any(isinstance(p, FilePart) for m in reloaded for p in m.parts)


class Keeping(Looking):
    media_eviction = None


async def test_without_eviction_every_image_is_sent_again(data_dir: Path) -> None:
    Keeping.requests = []
    photo = Message(id="u1", role="user", parts=[TextPart(text="What is this?"),
                                                 FilePart(media_type="image/png", url=data_url(PNG, "image/png"))])
    async with open_agent(Keeping, "keeping", data_dir=data_dir) as agent:
        await agent.save_messages(photo)
        result: Any = None
        for i in range(6):
            result = await agent.save_messages(f"question {i}")
        assert result.message.text == "files: 1"


EVICTING_CHILD = textwrap.dedent("""
    import asyncio, base64, sys
    from think.messages import FilePart, Message, TextPart
    from think.sessions import MIGRATIONS, Session
    from think.sessions.eviction import MediaEviction, MediaEvictor
    from think.storage import Database, migrate
    from think.workspace.workspace import Workspace

    db = Database(sys.argv[1])
    migrate(db, MIGRATIONS)
    session, workspace = Session(db), Workspace(db)
    url = "data:image/jpeg;base64," + base64.b64encode(bytes(range(256)) * 64).decode()
    session.add_messages([Message(id="pic", role="assistant", parts=[TextPart(text="a sketch"),
                                                                     FilePart(media_type="image/jpeg", url=url)])]
                         + [Message.user(f"q{i}", id=f"q{i}") for i in range(9)])

    def trace(statement):
        if statement.startswith("UPDATE think_messages"):
            print("mid-eviction", flush=True)
            sys.stdin.readline()  # the file is written; the message is not stored again yet
    db.connection.set_trace_callback(trace)
    asyncio.run(MediaEvictor(workspace).evict(session, MediaEviction()))
""")


def kill_mid_eviction(path: Path) -> None:
    """Run an eviction pass in a real process and SIGKILL it once the file is written."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    child = subprocess.Popen([sys.executable, "-c", EVICTING_CHILD, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "mid-eviction"
    child.send_signal(signal.SIGKILL)
    child.wait()


async def test_a_kill_between_the_file_and_the_message_leaves_the_message_whole(tmp_path: Path) -> None:
    path = tmp_path / "evict.db"
    kill_mid_eviction(path)
    db = Database(path)
    migrate(db, [*MIGRATIONS, *WORKSPACE_MIGRATIONS])
    session, workspace = Session(db), Workspace(db)
    picture = session.get_message("pic")
    assert picture is not None and isinstance(picture.parts[1], FilePart)  # as it was
    assert await workspace.read_bytes("/attachments/evicted/pic-1.jpeg") == bytes(range(256)) * 64
    assert await MediaEvictor(workspace).evict(session, MediaEviction()) == 1  # the next pass finishes it
    evicted = session.get_message("pic")
    assert evicted is not None and evicted.parts[1] == TextPart(
        text="[evicted image/jpeg, 16,384 bytes; preserved at /attachments/evicted/pic-1.jpeg]")
    assert [f.path for f in await workspace.list("/attachments/evicted")] == ["/attachments/evicted/pic-1.jpeg"]
