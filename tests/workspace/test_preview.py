"""`preview_file`: a file as a client's file panel shows it; binary and large files are described,
not sent; missing paths, directories and bad arguments are clear errors."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from think.storage import Database
from think.workspace import FileNotFound, InvalidPath, IsADirectory, Workspace, preview_file
from think.workspace.preview import DEFAULT_PREVIEW_BYTES, MAX_PREVIEW_BYTES

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


@pytest.fixture
def ws() -> Workspace:
    return Workspace(Database(":memory:"))


def without_times(preview: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(preview.pop("createdAt"), int) and isinstance(preview.pop("updatedAt"), int)
    return preview


async def test_a_text_file_comes_with_its_info_and_content(ws: Workspace) -> None:
    await ws.write_file("/notes/todo.md", "- ship it\n- ünïcode\n")
    assert without_times(await preview_file(ws, "notes/../notes/todo.md")) == {
        "path": "/notes/todo.md", "name": "todo.md", "type": "file", "mimeType": "text/markdown", "size": 22,
        "content": "- ship it\n- ünïcode\n"}


async def test_text_written_as_bytes_is_still_text(ws: Workspace) -> None:
    await ws.apply(writes={"/out/log": b"line 1\nline 2\n", "/out/blob": b"\x00\x01\x02binary"})
    assert (await preview_file(ws, "/out/log"))["content"] == "line 1\nline 2\n"
    blob = await preview_file(ws, "/out/blob")
    assert (blob["content"], blob["reason"]) == (None, "binary")


async def test_a_binary_file_is_described_not_sent(ws: Workspace) -> None:
    await ws.write_file("/dot.png", PNG)
    preview = without_times(await preview_file(ws, "/dot.png"))
    assert preview == {"path": "/dot.png", "name": "dot.png", "type": "file", "mimeType": "image/png", "size": 32,
                       "content": None, "reason": "binary",
                       "note": "/dot.png is a binary file (image/png, 32 B); it is not shown as text.",
                       "dataUrl": "data:image/png;base64," + base64.b64encode(PNG).decode()}
    await ws.write_file("/blob.bin", b"\x00\x01\x02")
    assert "dataUrl" not in await preview_file(ws, "/blob.bin")  # only images a browser shows


async def test_a_file_over_the_limit_is_not_read(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    await ws.write_file("/big.log", "x" * (DEFAULT_PREVIEW_BYTES + 1))

    async def refuse(path: str) -> bytes | None:
        raise AssertionError("a file over the limit must not be read")

    monkeypatch.setattr(ws, "read_bytes", refuse)
    preview = await preview_file(ws, "/big.log")
    assert (preview["content"], preview["reason"], preview["size"]) == (None, "too-large", DEFAULT_PREVIEW_BYTES + 1)
    assert preview["note"] == "/big.log is 1.0 MB, over the 1.0 MB that can be shown here."
    small = await preview_file(ws, "/big.log", max_bytes=100)
    assert small["note"] == "/big.log is 1.0 MB, over the 100 B that can be shown here."
    # Asking for more than the ceiling gets the ceiling.
    await ws.write_file("/huge.log", "y" * (MAX_PREVIEW_BYTES + 1))
    assert (await preview_file(ws, "/huge.log", max_bytes=10**9))["reason"] == "too-large"


async def test_missing_paths_directories_and_bad_arguments_are_errors(ws: Workspace) -> None:
    await ws.mkdir("/src")
    with pytest.raises(FileNotFound, match=r"^ENOENT: no such file: /nope\.txt$"):
        await preview_file(ws, "/nope.txt")
    with pytest.raises(IsADirectory, match=r"^EISDIR: /src is a directory, not a file \(list it with list_workspace\)"):
        await preview_file(ws, "src/")
    with pytest.raises(IsADirectory):
        await preview_file(ws, "/")
    with pytest.raises(InvalidPath, match="NUL"):
        await preview_file(ws, "/a\x00b")
    with pytest.raises(InvalidPath, match="a path must be a string, not int"):
        await preview_file(ws, 7)  # type: ignore[arg-type]
    for bad in (0, -1, True, "10", 1.5):
        with pytest.raises(InvalidPath, match="max_bytes must be a positive integer"):
            await preview_file(ws, "/src", max_bytes=bad)  # type: ignore[arg-type]
