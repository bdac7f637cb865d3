"""The files panel of the shipped page, in headless Chromium against a real server: it lists the
agent's workspace, follows `think_workspace_change` frames without a reload, and shows a file."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any

from tests.ui.conftest import SCREENSHOTS, Browser
from think import Think, tool
from think.models.base import ModelRequest, ToolMessage
from think.testing import ScriptedModel, call
from think.testing.models import Reply
from think.tools.tool import ToolContext

ADDRESS = "files-assistant"
NOTE = "# Hello\n\nWritten by the agent.\n"


def script(request: ModelRequest) -> Reply:
    if isinstance(request.messages[-1], ToolMessage):
        return "Done."
    said = request.last_user_text.lower()
    if "write" in said:
        return call("write", path="/notes/hello.md", content=NOTE)
    if "edit" in said:
        return call("edit", path="/notes/hello.md", old_string="Written by the agent.", new_string="Edited, live.")
    if "remove" in said:
        return call("delete", path="/notes", recursive=True)
    if "draw" in said:
        return call("draw")
    return "Nothing to do."


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A real PNG of one colour."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@tool
async def draw(ctx: ToolContext) -> str:
    """Draw a small picture into the workspace."""
    await ctx.agent.workspace.write_file("/art/square.png", png(24, 16, (79, 70, 229)))
    return "Drew /art/square.png"


class FilesAssistant(Think):
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script, chunk_delay=0.005)

    def get_tools(self) -> list[Any]:
        return [draw]


Serve = Callable[..., Any]


def _send(message: str) -> list[dict[str, Any]]:
    return [
        {"action": "fill", "selector": "#composer-input", "text": message},
        {"action": "press", "selector": "#composer-input", "key": "Enter"},
        {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "Done."},
        {"action": "waitFor", "selector": "button[aria-label='Send message']", "state": "attached"},
    ]


def _rpc_methods(sent: list[dict[str, Any]]) -> list[str]:
    return [frame["method"] for frame in sent if frame.get("type") == "rpc"]


def test_the_panel_follows_the_workspace_live_and_shows_a_file(browser: Browser, serve: Serve) -> None:
    item = ".files-item[data-path='{}']".format
    with serve([FilesAssistant]) as url:
        run = browser.run(url, [
            {"action": "goto", "path": f"/#/{ADDRESS}/live"},
            {"action": "waitFor", "selector": "#composer-input"},
            {"action": "count", "selector": ".files", "as": "panels_before"},
            {"action": "click", "selector": "button[aria-label='Files']"},
            {"action": "waitText", "selector": ".files-note", "text": "The workspace is empty"},
            # A marker that a reload would lose: everything below happens on this one page.
            {"action": "eval", "as": "marked", "js": "(window.__sameDocument = true)"},
            *_send("Please write a note"),
            {"action": "waitFor", "selector": item("/notes")},
            {"action": "click", "selector": item("/notes")},
            {"action": "waitFor", "selector": item("/notes/hello.md")},
            {"action": "text", "selector": ".files-crumb", "as": "crumbs"},
            {"action": "text", "selector": f"{item('/notes/hello.md')} .files-meta", "as": "size"},
            {"action": "click", "selector": item("/notes/hello.md")},
            {"action": "waitText", "selector": ".files-content", "text": "Written by the agent."},
            {"action": "text", "selector": ".files-content", "as": "content"},
            {"action": "text", "selector": ".files-view-head .files-meta", "as": "meta"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "files.png")},
            # The open file follows an edit, live.
            *_send("Now edit it"),
            {"action": "waitText", "selector": ".files-content", "text": "Edited, live."},
            {"action": "text", "selector": ".files-content", "as": "edited"},
            # Deleting its folder takes the view back to a listing of what is left.
            {"action": "click", "selector": "button[aria-label='Back to the folder']"},
            *_send("Now remove the notes"),
            {"action": "waitText", "selector": ".files-note", "text": "The workspace is empty"},
            {"action": "eval", "as": "same_document", "js": "window.__sameDocument === true"},
            # The panel closes, and stays closed after a reload; the chat is untouched.
            {"action": "click", "selector": "button[aria-label='Close files']"},
            {"action": "waitGone", "selector": ".files"},
            {"action": "attr", "selector": "button[aria-label='Files']", "name": "aria-pressed", "as": "pressed"},
            {"action": "count", "selector": ".msg-assistant", "as": "answers"},
        ])
    values = run.values
    assert values["panels_before"] == 0
    assert values["crumbs"] == ["workspace", "notes"]
    assert values["size"] == [f"{len(NOTE)} B"]
    assert values["content"] == [NOTE]
    assert values["meta"] == [f"text/markdown · {len(NOTE)} B"]
    assert values["edited"] == [NOTE.replace("Written by the agent.", "Edited, live.")]
    assert values["same_document"] is True
    assert values["pressed"] == "false"
    assert values["answers"] == 3

    # The page learned of each change from a frame, not by polling.
    changes = [f for f in run.received if f.get("type") == "think_workspace_change"]
    assert [[(c["kind"], c["path"]) for c in f["changes"]] for f in changes] == [
        [("create", "/notes"), ("create", "/notes/hello.md")],
        [("update", "/notes/hello.md")],
        [("delete", "/notes")],
    ]
    methods = [m for m in _rpc_methods(run.sent) if m in ("list_workspace", "read_workspace_file")]  # this panel's
    assert methods.count("list_workspace") <= 8 and methods.count("read_workspace_file") <= 4
    assert methods[0] == "list_workspace"
    assert "read_workspace_file" in methods
    assert not [line for line in run.console if line.startswith(("pageerror", "error"))]


def test_the_panel_is_remembered_and_fits_a_phone(browser: Browser, serve: Serve) -> None:
    with serve([FilesAssistant]) as url:
        run = browser.run(url, [
            {"action": "goto", "path": f"/#/{ADDRESS}/phone"},
            {"action": "waitFor", "selector": "#composer-input"},
            *_send("Please write a note"),
            {"action": "click", "selector": "button[aria-label='Files']"},
            {"action": "waitFor", "selector": ".files-item[data-path='/notes']"},
            # A reload opens the panel again: the choice is remembered.
            {"action": "goto", "path": f"/#/{ADDRESS}/phone"},
            {"action": "waitFor", "selector": ".files-item[data-path='/notes']"},
            {"action": "eval", "as": "overflow",
             "js": "document.documentElement.scrollWidth - document.documentElement.clientWidth"},
            {"action": "eval", "as": "panel_width", "js": "document.querySelector('.files').offsetWidth"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "files-phone-dark.png")},
        ], viewport={"width": 390, "height": 780}, colorScheme="dark")
    assert run.values["overflow"] == 0
    assert run.values["panel_width"] == 390


def test_an_image_in_the_workspace_is_shown_as_a_picture(browser: Browser, serve: Serve) -> None:
    item = ".files-item[data-path='{}']".format
    with serve([FilesAssistant]) as url:
        run = browser.run(url, [
            {"action": "goto", "path": f"/#/{ADDRESS}/art"},
            {"action": "waitFor", "selector": "#composer-input"},
            {"action": "click", "selector": "button[aria-label='Files']"},
            *_send("Please draw something"),
            {"action": "click", "selector": item("/art")},
            {"action": "click", "selector": item("/art/square.png")},
            {"action": "waitFor", "selector": ".files-image img"},
            {"action": "eval", "as": "size",
             "js": "(async () => { const img = document.querySelector('.files-image img'); await img.decode();"
                   " return [img.naturalWidth, img.naturalHeight]; })()"},
            {"action": "count", "selector": ".files-content", "as": "text_views"},
        ])
    assert run.values["size"] == [24, 16]  # decoded by the browser: a real picture, not a note
    assert run.values["text_views"] == 0
