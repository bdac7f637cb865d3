"""`Workspace`: files and directories in SQLite, blobs beside it, quotas, change events."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from think.storage import Database
from think.workspace import (
    DirectoryNotEmpty,
    FileExists,
    FileNotFound,
    InvalidPath,
    IsADirectory,
    LocalBlobStore,
    NotADirectory,
    QuotaExceeded,
    Workspace,
    WorkspaceChange,
    WorkspaceError,
)


@pytest.fixture
def ws() -> Workspace:
    return Workspace(Database(":memory:"))


async def test_text_and_binary_round_trip(ws: Workspace) -> None:
    await ws.write_file("/notes/todo.md", "- ship it\n")
    await ws.write_file("/img/dot.bin", b"\x00\x01\xff")
    assert await ws.read_file("/notes/todo.md") == "- ship it\n"
    assert await ws.read_bytes("/img/dot.bin") == b"\x00\x01\xff"
    assert await ws.read_file("/missing.txt") is None
    info = await ws.stat("/notes/todo.md")
    assert info is not None
    assert (info.name, info.type, info.size, info.mime_type) == ("todo.md", "file", 10, "text/markdown")
    assert info.to_json()["mimeType"] == "text/markdown"
    assert (await ws.stat("/notes")).type == "directory"  # type: ignore[union-attr]
    with pytest.raises(IsADirectory, match="EISDIR"):
        await ws.read_file("/notes")


async def test_media_types_come_from_content_first(ws: Workspace) -> None:
    await ws.write_file("/src/app.ts", "export const x = 1;\n")  # not the system mime.types
    await ws.write_file("/photo", b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)
    await ws.write_file("/data.json", b'{"a": 1}')
    assert (await ws.stat("/src/app.ts")).mime_type == "application/typescript"  # type: ignore[union-attr]
    assert (await ws.stat("/photo")).mime_type == "image/png"  # type: ignore[union-attr]
    assert (await ws.stat("/data.json")).mime_type == "application/json"  # type: ignore[union-attr]


async def test_paths_are_normalized_and_never_leave_the_workspace(ws: Workspace, tmp_path: Path) -> None:
    await ws.write_file("../../etc/passwd", "not the host's")
    assert await ws.read_file("/etc/passwd") == "not the host's"
    assert [f.path for f in await ws.glob("**")] == ["/etc", "/etc/passwd"]
    assert await ws.read_file("/etc/hostname") is None  # a host path is just a workspace path
    await ws.write_file("a//b/./c/../d.txt", "x")
    assert await ws.read_file("/a/b/d.txt") == "x"
    host_file = tmp_path / "secret.txt"
    host_file.write_text("host")
    assert await ws.read_file(str(host_file)) is None
    with pytest.raises(InvalidPath, match="NUL"):
        await ws.write_file("/a\x00b", "x")
    with pytest.raises(InvalidPath, match="ENAMETOOLONG"):
        await ws.write_file("/" + "n" * 256, "x")
    with pytest.raises(IsADirectory):
        await ws.write_file("/../..", "x")


async def test_list_puts_directories_first_then_names(ws: Workspace) -> None:
    for path in ("/b.txt", "/a.txt", "/z/x.txt", "/m/y.txt"):
        await ws.write_file(path, "1")
    assert [e.name for e in await ws.list("/")] == ["m", "z", "a.txt", "b.txt"]
    assert [e.name for e in await ws.list("/", limit=2, offset=1)] == ["z", "a.txt"]
    with pytest.raises(FileNotFound):
        await ws.list("/nope")
    with pytest.raises(NotADirectory):
        await ws.list("/a.txt")


async def test_glob(ws: Workspace) -> None:
    for path in ("/a.md", "/docs/b.md", "/docs/deep/c.md", "/docs/deep/d.txt", "/x.py"):
        await ws.write_file(path, "")
    assert [f.path for f in await ws.glob("*.md")] == ["/a.md"]
    assert [f.path for f in await ws.glob("**/*.md")] == ["/a.md", "/docs/b.md", "/docs/deep/c.md"]
    assert [f.path for f in await ws.glob("/docs/*")] == ["/docs/b.md", "/docs/deep"]
    assert [f.path for f in await ws.glob("/docs/deep/?.{md,txt}")] == ["/docs/deep/c.md", "/docs/deep/d.txt"]
    assert [f.path for f in await ws.glob("/[ax].*")] == ["/a.md", "/x.py"]
    assert [f.path for f in await ws.glob("/x.py")] == ["/x.py"]


async def test_search_regex_and_fixed(ws: Workspace) -> None:
    await ws.write_file("/a.py", "def f():\n    return 1\n")
    await ws.write_file("/b.py", "x = f(1)\n")
    await ws.write_file("/c.txt", "f( literal\n")
    found = await ws.search(r"f\(", include="**/*.py")
    assert [(m.path, m.line, m.text) for m in found.matches] == [("/a.py", 1, "def f():"), ("/b.py", 1, "x = f(1)")]
    assert (found.files_searched, found.files_with_matches, found.total_matches) == (2, 2, 2)
    fixed = await ws.search("f(", fixed=True)
    assert [m.path for m in fixed.matches] == ["/a.py", "/b.py", "/c.txt"]
    assert (await ws.search("DEF", case_sensitive=False)).total_matches == 1


async def test_mkdir(ws: Workspace) -> None:
    await ws.mkdir("/a")
    with pytest.raises(FileExists):
        await ws.mkdir("/a")
    await ws.mkdir("/a", recursive=True)
    with pytest.raises(FileNotFound, match="parent directory not found"):
        await ws.mkdir("/x/y")
    await ws.mkdir("/x/y/z", recursive=True)
    assert [f.path for f in await ws.glob("/x/**")] == ["/x/y", "/x/y/z"]
    await ws.write_file("/file", "")
    with pytest.raises(NotADirectory):
        await ws.mkdir("/file/sub")
    with pytest.raises(NotADirectory):
        await ws.write_file("/file/sub.txt", "")


async def test_rm(ws: Workspace) -> None:
    await ws.write_file("/d/e/f.txt", "x")
    with pytest.raises(DirectoryNotEmpty):
        await ws.rm("/d")
    await ws.rm("/d", recursive=True)
    assert await ws.glob("**") == []
    with pytest.raises(FileNotFound):
        await ws.rm("/d")
    await ws.rm("/d", force=True)
    with pytest.raises(WorkspaceError, match="EPERM"):
        await ws.rm("/", recursive=True)


async def test_mv_and_cp(ws: Workspace) -> None:
    await ws.write_file("/src/a.txt", "A")
    await ws.write_file("/src/sub/b.txt", "B")
    await ws.cp("/src", "/copy", recursive=True)
    await ws.mv("/src", "/moved/here")
    assert [f.path for f in await ws.glob("**")] == [
        "/copy", "/copy/a.txt", "/copy/sub", "/copy/sub/b.txt", "/moved", "/moved/here", "/moved/here/a.txt",
        "/moved/here/sub", "/moved/here/sub/b.txt"]
    assert [e.name for e in await ws.list("/moved/here/sub")] == ["b.txt"]
    assert await ws.read_file("/moved/here/sub/b.txt") == "B"
    await ws.write_file("/target.txt", "old")
    await ws.mv("/copy/a.txt", "/target.txt")
    assert await ws.read_file("/target.txt") == "A"
    with pytest.raises(IsADirectory):
        await ws.mv("/target.txt", "/copy")
    with pytest.raises(InvalidPath, match="into itself"):
        await ws.mv("/moved", "/moved/inner")
    with pytest.raises(IsADirectory, match="without recursive"):
        await ws.cp("/copy", "/again")
    with pytest.raises(FileNotFound):
        await ws.mv("/nothing", "/x")


async def test_append(ws: Workspace) -> None:
    await ws.append_file("/log.txt", "a\n")
    await ws.append_file("/log.txt", "b\n")
    assert await ws.read_file("/log.txt") == "a\nb\n"


async def test_quotas_raise_clear_errors() -> None:
    ws = Workspace(Database(":memory:"), max_file_bytes=1000, max_total_bytes=2500)
    with pytest.raises(QuotaExceeded, match=r"EFBIG: /big would be 1001 B, over the workspace.s 1000 B limit per file"):
        await ws.write_file("/big", b"x" * 1001)
    await ws.write_file("/a", b"x" * 1000)
    await ws.write_file("/b", b"x" * 1000)
    message = r"ENOSPC: writing /c would bring the workspace to 2\.9 KB, over its 2\.4 KB limit"
    with pytest.raises(QuotaExceeded, match=message) as caught:
        await ws.write_file("/c", b"x" * 1000)
    assert (caught.value.code, caught.value.limit) == ("ENOSPC", 2500)
    await ws.write_file("/a", b"y" * 500)  # replacing a file counts only the difference
    await ws.write_file("/c", b"x" * 1000)
    assert (await ws.info())["totalBytes"] == 2500
    assert await ws.read_file("/missing") is None


async def test_a_20_mb_file_spills_to_the_blob_directory(tmp_path: Path) -> None:
    db = Database(tmp_path / "agent.db")
    ws = Workspace(db)
    assert isinstance(ws.blobs, LocalBlobStore) and ws.blobs.directory == tmp_path / "agent.db.blobs"
    big = os.urandom(1024) * (20 * 1024)
    await ws.write_file("/data/big.bin", big)
    row = db.one("SELECT size, blob_key, content FROM think_workspace WHERE path = '/data/big.bin'")
    assert row is not None and row["size"] == len(big) and row["content"] is None and row["blob_key"]
    blob = tmp_path / "agent.db.blobs" / row["blob_key"]
    assert blob.stat().st_size == len(big)
    assert await ws.read_bytes("/data/big.bin") == big
    assert (await ws.info())["blobFileCount"] == 1
    # Reading back through a second instance (a restarted agent) works the same.
    assert await Workspace(Database(tmp_path / "agent.db")).read_bytes("/data/big.bin") == big
    await ws.mv("/data/big.bin", "/big.bin")
    assert await ws.read_bytes("/big.bin") == big
    await ws.cp("/big.bin", "/copy.bin")
    await ws.write_file("/big.bin", "small now")  # replaced inline: the old blob goes away
    assert not blob.exists()
    assert await ws.read_file("/big.bin") == "small now"
    await ws.rm("/copy.bin")
    assert [p.name for p in (tmp_path / "agent.db.blobs" / "default").iterdir()] == []


async def test_in_memory_workspaces_keep_large_files_inline() -> None:
    ws = Workspace(Database(":memory:"), inline_threshold=10)
    assert ws.blobs is None
    await ws.write_file("/x", b"y" * 100)
    assert await ws.read_bytes("/x") == b"y" * 100


async def test_change_events(ws: Workspace) -> None:
    seen: list[WorkspaceChange] = []
    later: list[dict[str, str]] = []

    async def async_listener(change: WorkspaceChange) -> None:
        later.append(change.to_json())

    unsubscribe = ws.on_change(seen.append)
    ws.on_change(async_listener)
    await ws.write_file("/a/b.txt", "1")
    await ws.write_file("/a/b.txt", "2")
    await ws.mv("/a/b.txt", "/c.txt")
    await ws.rm("/a")
    unsubscribe()
    await ws.write_file("/quiet.txt", "")
    assert [(c.kind, c.path, c.entry_type) for c in seen] == [
        ("create", "/a", "directory"), ("create", "/a/b.txt", "file"), ("update", "/a/b.txt", "file"),
        ("delete", "/a/b.txt", "file"), ("create", "/c.txt", "file"), ("delete", "/a", "directory")]
    assert later[-1] == {"type": "create", "path": "/quiet.txt", "entryType": "file"}


async def test_a_failing_listener_does_not_break_writes(ws: Workspace) -> None:
    def broken(change: WorkspaceChange) -> None:
        raise RuntimeError("boom")

    ws.on_change(broken)
    await ws.write_file("/a.txt", "still written")
    assert await ws.read_file("/a.txt") == "still written"


async def test_namespaces_are_separate() -> None:
    db = Database(":memory:")
    one, two = Workspace(db), Workspace(db, namespace="scratch")
    await one.write_file("/a.txt", "one")
    assert await two.read_file("/a.txt") is None
    with pytest.raises(ValueError, match="namespace"):
        Workspace(db, namespace="no-dashes")


async def test_apply_batches_and_reports_refusals() -> None:
    ws = Workspace(Database(":memory:"), max_file_bytes=10)
    await ws.write_file("/keep/old.txt", "old")
    await ws.write_file("/gone.txt", "x")
    result = await ws.apply(writes={"/new/a.txt": b"a", "/too-big": b"x" * 11}, mkdirs=["/empty/dir"],
                            deletes=["/gone.txt", "/keep"])
    assert sorted((c.kind, c.path) for c in result.changes) == [
        ("create", "/empty"), ("create", "/empty/dir"), ("create", "/new"), ("create", "/new/a.txt"),
        ("delete", "/gone.txt")]
    assert result.errors == ["EFBIG: /too-big would be 11 B, over the workspace's 10 B limit per file",
                             "/keep: not deleted, it still holds files that were not mounted"]
