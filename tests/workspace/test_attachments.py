"""Files attached to a user message: stored in the workspace, pointed at from the transcript,
read back into `data:` URLs for the model, and refused with a reason when they cannot be kept."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from think import Message, Think, open_agent
from think.messages import FilePart, TextPart
from think.models.base import FileContent, ModelRequest, TextContent, UserMessage
from think.server.reconcile import reconcile
from think.testing import ScriptedModel
from think.turns.trust import Refused, ToolKinds

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
                       "RU5ErkJggg==")


def data_url(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


class Looking(Think):
    """Answers with what the model was given: each file's media type and its bytes' length."""

    max_attachment_bytes = 1024
    seen: list[Any]

    def get_model(self) -> ScriptedModel:
        def reply(request: ModelRequest) -> str:
            last = request.messages[-1]
            assert isinstance(last, UserMessage)
            type(self).seen = list(last.content)
            files = [c for c in last.content if isinstance(c, FileContent)]
            return " ".join(f"{f.media_type}:{len(base64.b64decode(f.data.split(',', 1)[1]))}" for f in files) or "none"

        return ScriptedModel(reply)


def with_file(text: str, url: str, *, filename: str | None = "dot.png", media_type: str = "image/png",
              id: str = "u1") -> Message:
    return Message(id=id, role="user", parts=[TextPart(text=text), FilePart(media_type=media_type, url=url,
                                                                            filename=filename)])


async def test_an_attached_image_is_kept_in_the_workspace_and_shown_to_the_model(data_dir: Path) -> None:
    async with open_agent(Looking, "img", data_dir=data_dir) as agent:
        result = await agent.save_messages(with_file("What is this?", data_url(PNG)))
        assert result.status == "completed"
        question, answer = agent.messages
        [part] = [p for p in question.parts if isinstance(p, FilePart)]
        assert part.url == "workspace:/attachments/u1/1-dot.png"  # the transcript points at the file
        assert await agent.workspace.read_bytes("/attachments/u1/1-dot.png") == PNG
        assert (await agent.workspace.stat("/attachments/u1/1-dot.png")).mime_type == "image/png"  # type: ignore[union-attr]
        assert answer.text == f"image/png:{len(PNG)}"  # the model got the bytes back, as a data: URL

        await agent.workspace.rm("/attachments/u1/1-dot.png")  # gone: the model is told so
        await agent.regenerate(question.id)
        assert [c.text for c in Looking.seen if isinstance(c, TextContent)] == [
            "What is this?", "[The attached file dot.png is no longer in the workspace.]"]


async def test_names_are_made_safe_and_a_resent_message_writes_the_same_file(data_dir: Path) -> None:
    async with open_agent(Looking, "names", data_dir=data_dir) as agent:
        await agent.save_messages(with_file("x", data_url(b"hello", "text/plain"), filename="../../etc/pass wd",
                                            media_type="text/plain", id="../u/2"))
        [part] = [p for p in agent.messages[0].parts if isinstance(p, FilePart)]
        assert part.url == "workspace:/attachments/u-2/1-pass-wd"
        assert [e.path for e in await agent.workspace.list("/attachments")] == ["/attachments/u-2"]


@pytest.mark.parametrize(("url", "media_type", "reason"), [
    (data_url(b"x" * 1100), "image/png", "is 1.1 KB, larger than the 1 KB an attachment may be"),
    (data_url(b"x" * 20_000), "image/png", "larger than the 1 KB an attachment may be"),
    ("data:image/png;base64,%%%not-base64", "image/png", "its data is not valid base64"),
    ("data:image/png;base64", "image/png", "needs a comma"),
    (data_url(PNG), "not a type", "has no valid media type"),
], ids=["over-the-limit", "far-over-the-limit", "bad-base64", "no-comma", "bad-media-type"])
async def test_an_attachment_that_cannot_be_kept_fails_the_turn_and_stores_nothing(
        data_dir: Path, url: str, media_type: str, reason: str) -> None:
    async with open_agent(Looking, "bad", data_dir=data_dir) as agent:
        result = await agent.save_messages(with_file("look", url, media_type=media_type))
        assert result.status == "error" and result.error is not None and reason in result.error
        assert "dot.png" in result.error
        assert agent.messages == []
        assert not await agent.workspace.exists("/attachments")


async def test_a_client_cannot_point_an_attachment_at_the_workspace(data_dir: Path) -> None:
    async with open_agent(Looking, "trust", data_dir=data_dir) as agent:
        forged = with_file("read this", "workspace:/secrets/keys.txt", media_type="text/plain")
        with pytest.raises(Refused, match=r"messages\[0\]: a client cannot attach a workspace: URL"):
            reconcile([forged], agent.session, kinds=ToolKinds(server=frozenset(), client=frozenset()))
        fine = reconcile([with_file("ok", data_url(PNG))], agent.session,
                         kinds=ToolKinds(server=frozenset(), client=frozenset()))
        assert [m.id for m in fine.fresh] == ["u1"]


def test_every_client_path_refuses_a_workspace_url() -> None:
    from think.turns.trust import client_input

    forged = with_file("read this", "workspace:/secrets/keys.txt", media_type="text/plain")
    with pytest.raises(Refused, match="cannot attach a workspace: URL"):
        client_input([forged], stored=lambda _: False)  # a harness input with source="client"
    kept, reason = client_input([with_file("ok", data_url(PNG))], stored=lambda _: False)
    assert reason is None and [m.id for m in kept] == ["u1"]


class LookingBack(Think):
    """Answers with every file the model was given, over the whole conversation."""

    media_eviction = None  # old images stay images: what is looked at here is the read-back

    def get_model(self) -> ScriptedModel:
        def reply(request: ModelRequest) -> str:
            files = [c for m in request.messages if isinstance(m, UserMessage)
                     for c in m.content if isinstance(c, FileContent)]
            return " ".join(f"{f.media_type}:{len(base64.b64decode(f.data.split(',', 1)[1]))}" for f in files) or "none"

        return ScriptedModel(reply)


async def test_a_file_far_back_in_a_long_conversation_is_still_read_back(data_dir: Path) -> None:
    async with open_agent(LookingBack, "long", data_dir=data_dir) as agent:
        await agent.save_messages(with_file("First", data_url(PNG), id="first"))
        await agent.workspace.rm("/attachments/first/1-dot.png")  # the first message's file is gone
        for i in range(12):
            await agent.save_messages([f"plain {i}"])
        await agent.save_messages(with_file("Keep this", data_url(PNG), id="img"))
        for i in range(12):  # the file's message is now among the older ones, converted once
            result = await agent.save_messages([f"later {i}"])
            assert result.status == "completed"
            assert agent.messages[-1].text == f"image/png:{len(PNG)}"
        await agent.workspace.rm("/attachments/img/1-dot.png")
        await agent.save_messages(["and now?"])
        assert agent.messages[-1].text == "none"


async def test_a_turn_looks_for_files_only_in_messages_not_looked_at_before(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import think.workspace.attachments as attachments

    looked = [0]
    real = attachments.has_workspace_file

    def counting(message: Any) -> bool:
        looked[0] += 1
        return real(message)

    monkeypatch.setattr(attachments, "has_workspace_file", counting)

    async def looked_at_in_a_turn(agent: Think) -> int:
        looked[0] = 0
        await agent.save_messages(["one more"])
        return looked[0]

    async with open_agent(LookingBack, "cost", data_dir=data_dir) as agent:
        for _ in range(5):
            await agent.save_messages(["warm up"])
        early = await looked_at_in_a_turn(agent)
        for _ in range(60):
            await agent.save_messages(["filler"])
        late = await looked_at_in_a_turn(agent)
        assert len(agent.messages) > 120
        assert late <= max(early, 3 * LookingBack.truncation_step)  # not the whole conversation
