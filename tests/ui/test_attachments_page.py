"""Attachments in the web UI, in headless Chromium against a live server: a picked image goes
with the message, is kept in the workspace and shown in the bubble, and reaches the model; a
dropped file over the agent's limit is flagged and holds the send back until it is removed."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.ui.conftest import SCREENSHOTS, Browser
from think import Think
from think.models.base import FileContent, ModelRequest, UserMessage
from think.testing import ScriptedModel

Serve = Callable[..., Any]
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
                       "RU5ErkJggg==")


class Viewer(Think):
    """Says what files the model was given with the last message: media type and byte count."""

    max_attachment_bytes = 4096

    def get_model(self) -> ScriptedModel:
        def reply(request: ModelRequest) -> str:
            last = request.messages[-1]
            assert isinstance(last, UserMessage)
            files = [c for c in last.content if isinstance(c, FileContent)]
            seen = [f"{f.media_type}:{len(base64.b64decode(f.data.split(',', 1)[1]))}" for f in files]
            return "I was given " + (", ".join(seen) or "no file") + "."

        return ScriptedModel(reply)


DROP_TOO_BIG = """(() => {
  const transfer = new DataTransfer();
  transfer.items.add(new File([new Uint8Array(5000)], "big.bin", { type: "application/octet-stream" }));
  const zone = document.querySelector(".chat-main");
  zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: transfer, bubbles: true, cancelable: true }));
  zone.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
  return transfer.files.length;
})()"""


def test_a_picked_image_is_sent_kept_shown_and_seen_by_the_model(browser: Browser, serve: Serve,
                                                                 tmp_path: Path) -> None:
    picture = tmp_path / "dot.png"
    picture.write_bytes(PNG)
    with serve([Viewer]) as url:
        run = browser.run(url, [
            {"action": "goto", "path": "/#/viewer/v1"}, {"action": "waitFor", "selector": "#composer-input"},
            {"action": "setFiles", "selector": ".attach-btn input[type=file]", "files": [str(picture)]},
            {"action": "waitText", "selector": ".attachment-name", "text": "dot.png"},
            {"action": "fill", "selector": "#composer-input", "text": "What is this?"},
            {"action": "press", "selector": "#composer-input", "key": "Enter"},
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "I was given"},
            {"action": "waitFor", "selector": ".msg-user img.file-image"},
            {"action": "text", "selector": ".msg-assistant .text-part", "as": "answer"},
            {"action": "attr", "selector": ".msg-user img.file-image", "name": "data-path", "as": "path"},
            {"action": "eval", "as": "src",
             "js": "document.querySelector('.msg-user img.file-image').src.slice(0, 22)"},
            {"action": "count", "selector": ".attachment", "as": "chips_after_send"},
            # A dropped file over the limit: flagged, and the send waits until it is removed.
            {"action": "eval", "as": "dropped", "js": DROP_TOO_BIG},
            {"action": "waitFor", "selector": ".attachment.is-error"},
            {"action": "text", "selector": ".attachment.is-error .attachment-size", "as": "flag"},
            {"action": "fill", "selector": "#composer-input", "text": "and this?"},
            {"action": "attr", "selector": "button[aria-label='Send message']", "name": "disabled", "as": "blocked"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "attachments.png")},
            {"action": "click", "selector": ".attachment-remove"},
            {"action": "attr", "selector": "button[aria-label='Send message']", "name": "disabled", "as": "unblocked"},
        ])
        transcript = httpx.get(url + "agents/viewer/v1/get-messages").json()
    values = run.values
    assert values["answer"] == [f"I was given image/png:{len(PNG)}."]
    [question, _] = transcript
    [file_part] = [p for p in question["parts"] if p["type"] == "file"]
    assert file_part["url"] == f"workspace:{values['path']}" and values["path"].startswith("/attachments/")
    assert values["path"].endswith("-dot.png") and file_part["filename"] == "dot.png"
    assert values["src"] == "data:image/png;base64,"  # read back from the workspace for the bubble
    assert values["chips_after_send"] == 0
    assert values["dropped"] == 1
    assert values["flag"] == ["4.9 KB: larger than the 4 KB an attachment may be"]
    assert values["blocked"] == "" and values["unblocked"] is None
