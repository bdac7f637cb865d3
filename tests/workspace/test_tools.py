"""The file tools: input validation and the exact output formats of the original."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest
from inline_snapshot import snapshot

from think.models.base import (
    FileContent,
    ToolMessage,
    ToolResultContent,
    UserMessage,
    split_file_output,
    tool_results_message,
)
from think.storage import Database
from think.tools import InvalidToolInput, Tool, ToolContext, run_tool
from think.workspace import FileInfo, Workspace, create_read_tool, create_workspace_tools

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


@pytest.fixture
def ws() -> Workspace:
    return Workspace(Database(":memory:"))


@pytest.fixture
def tools(ws: Workspace) -> dict[str, Tool]:
    return create_workspace_tools(ws)


async def call(tool: Tool, **arguments: Any) -> Any:
    result = await run_tool(tool, tool.check_input(arguments), ToolContext(tool_call_id="c1", tool_name=tool.name))
    assert result.error is None, result.error
    return result.output


def rejects(tool: Tool, **arguments: Any) -> str:
    with pytest.raises(InvalidToolInput) as caught:
        tool.check_input(arguments)
    return str(caught.value)


def test_the_seven_tools_and_bash_on_request(ws: Workspace) -> None:
    assert list(create_workspace_tools(ws)) == ["read", "write", "edit", "list", "find", "grep", "delete"]
    assert list(create_workspace_tools(ws, bash=True))[-1] == "bash"
    for described in create_workspace_tools(ws, bash=True).values():  # the original's hint for models
        assert "there is no /workspace or /home" in " ".join(described.description.split())


def test_input_validation(tools: dict[str, Tool]) -> None:
    assert "path: Field required" in rejects(tools["read"])
    assert "offset: Input should be greater than or equal to 1" in rejects(tools["read"], path="/a", offset=0)
    assert "limit: Input should be greater than or equal to 1" in rejects(tools["read"], path="/a", limit=0)
    assert "content: Field required" in rejects(tools["write"], path="/a")
    assert "new_string: Field required" in rejects(tools["edit"], path="/a", old_string="x")
    assert "limit: Input should be less than or equal to 1000" in rejects(tools["list"], limit=1001)
    assert "offset: Input should be greater than or equal to 0" in rejects(tools["list"], offset=-1)
    assert "pattern: Field required" in rejects(tools["find"])
    assert "contextLines: Input should be less than or equal to 10" in rejects(tools["grep"], query="x",
                                                                                 contextLines=11)
    assert "Extra inputs are not permitted" in rejects(tools["delete"], path="/a", force=True)
    assert "path: Input should be a valid string" in rejects(tools["read"], path=3)


async def test_read_text_with_line_numbers(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/a.txt", "one\ntwo\nthree\nfour")
    assert await call(tools["read"], path="/a.txt") == {
        "path": "/a.txt", "content": "1\tone\n2\ttwo\n3\tthree\n4\tfour", "totalLines": 4}
    assert await call(tools["read"], path="/a.txt", offset=2, limit=2) == {
        "path": "/a.txt", "content": "2\ttwo\n3\tthree", "totalLines": 4, "fromLine": 2, "toLine": 3}
    assert await call(tools["read"], path="/a.txt", offset=4, limit=10) == {
        "path": "/a.txt", "content": "4\tfour", "totalLines": 4, "fromLine": 4, "toLine": 4}


async def test_read_truncates_long_lines_and_long_files(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/long.txt", "x" * 2500 + "\n" + "\n".join(str(i) for i in range(2, 2600)))
    out = await call(tools["read"], path="/long.txt")
    lines = out["content"].split("\n")
    assert lines[0] == "1\t" + "x" * 2000 + "... (truncated)"
    assert lines[1999] == "2000\t2000"
    assert lines[2000] == "... (599 more lines truncated)"
    assert out["totalLines"] == 2599


async def test_read_errors(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.mkdir("/dir")
    await ws.write_file("/blob.bin", b"\x00\x01\x02binary")
    assert await call(tools["read"], path="/nope.txt") == {"error": "File not found: /nope.txt"}
    assert await call(tools["read"], path="/dir") == {"error": "/dir is a directory, not a file"}
    assert await call(tools["read"], path="/blob.bin") == {
        "kind": "binary", "path": "/blob.bin", "name": "blob.bin", "mediaType": "application/octet-stream",
        "sizeBytes": 9, "unsupported": True}
    assert await call(tools["read"], path="/bad\x00name") == {"error": "EINVAL: a path cannot contain NUL bytes"}


async def test_read_an_image_gives_the_model_a_file(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/pics/dot.png", PNG)
    out = await call(tools["read"], path="/pics/dot.png")
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert out == {"type": "file", "kind": "image", "path": "/pics/dot.png", "name": "dot.png",
                   "mediaType": "image/png", "sizeBytes": 32, "text": "Read /pics/dot.png (image/png, 32 B).",
                   "data": data_url}
    # The file moves out of the tool result into a user message right after it.
    assert tool_results_message([ToolResultContent("c1", "read", out)]) == [
        ToolMessage((ToolResultContent("c1", "read", "Read /pics/dot.png (image/png, 32 B)."),)),
        UserMessage((FileContent("image/png", data_url, "dot.png"),))]
    assert split_file_output({"kind": "image"}) == ({"kind": "image"}, None)


async def test_read_a_pdf_and_refuse_a_huge_image(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/doc.pdf", b"%PDF-1.4 tiny")
    out = await call(tools["read"], path="/doc.pdf")
    assert (out["type"], out["kind"], out["mediaType"]) == ("file", "file", "application/pdf")
    await ws.write_file("/huge.png", PNG + b"\x00" * (4 * 1024 * 1024))
    assert await call(tools["read"], path="/huge.png") == {
        "error": "Read /huge.png (image/png, 4.0 MB), but it exceeds the 3.5 MB inline model output limit."}


async def test_write_creates_parents(ws: Workspace, tools: dict[str, Tool]) -> None:
    assert await call(tools["write"], path="/a/b/c.txt", content="héllo\nworld\n") == {
        "path": "/a/b/c.txt", "bytesWritten": 13, "lines": 3}
    assert await ws.read_file("/a/b/c.txt") == "héllo\nworld\n"
    assert await call(tools["write"], path="/a", content="x") == {"error": "EISDIR: /a is a directory"}


async def test_edit_exact_unique_and_create(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/f.py", "a = 1\nb = 2\nb = 2\n")
    assert await call(tools["edit"], path="/f.py", old_string="a = 1", new_string="a = 10") == {
        "path": "/f.py", "replaced": True, "lines": 4}
    assert await call(tools["edit"], path="/f.py", old_string="b = 2", new_string="b = 3") == {
        "error": "old_string appears 2 times in the file. Include more surrounding context to make the match "
                 "unique."}
    assert await call(tools["edit"], path="/f.py", old_string="c = 3", new_string="") == {
        "error": "old_string not found in file. Make sure it matches exactly, including whitespace and "
                 "indentation. Read the file first to verify."}
    assert await call(tools["edit"], path="/nope.py", old_string="x", new_string="y") == {
        "error": "File not found: /nope.py"}
    assert await call(tools["edit"], path="/new.py", old_string="", new_string="x\ny") == {
        "path": "/new.py", "created": True, "lines": 2}
    assert await call(tools["edit"], path="/new.py", old_string="", new_string="again") == {
        "error": "File already exists. Provide old_string to edit, or use the write tool to overwrite."}
    assert await ws.read_file("/f.py") == "a = 10\nb = 2\nb = 2\n"


async def test_edit_counts_overlapping_matches(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/o.txt", "aaa")
    out = await call(tools["edit"], path="/o.txt", old_string="aa", new_string="b")
    assert out["error"].startswith("old_string appears 2 times")


async def test_edit_fuzzy_whitespace_match(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/f.py", "def f():\r\n\tif  x:\r\n\t\treturn   1\r\n")
    out = await call(tools["edit"], path="/f.py", old_string="if x:\n  return 1", new_string="if y:\n\t\treturn 2")
    assert out == {"path": "/f.py", "replaced": True, "fuzzyMatch": True, "lines": 4}
    assert await ws.read_file("/f.py") == "def f():\r\n\tif y:\n\t\treturn 2\r\n"


async def test_edit_fuzzy_ambiguity_is_rejected(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/f.txt", "x  = 1\nx\t= 1\n")
    assert await call(tools["edit"], path="/f.txt", old_string="x = 1", new_string="x = 2") == {
        "error": "old_string matches multiple locations after whitespace normalization. Include more "
                 "surrounding context to make the match unique."}
    assert await ws.read_file("/f.txt") == "x  = 1\nx\t= 1\n"


async def test_list_format(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/small.txt", "x" * 12)
    await ws.write_file("/mid.bin", b"x" * 1536)
    await ws.write_file("/large.bin", b"x" * (3 * 1024 * 1024 + 100_000))
    await ws.mkdir("/sub")
    assert await call(tools["list"]) == {
        "path": "/", "count": 4, "entries": ["sub/", "large.bin (3.1 MB)", "mid.bin (1.5 KB)", "small.txt (12 B)"]}
    assert await call(tools["list"], path="/", limit=1, offset=1) == {
        "path": "/", "count": 1, "entries": ["large.bin (3.1 MB)"]}
    assert await call(tools["list"], path="/missing") == {"error": "ENOENT: no such directory: /missing"}


async def test_find_format_and_truncation(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/src/a.py", "")
    await ws.write_file("/src/pkg/b.py", "")
    assert await call(tools["find"], pattern="**/*.py") == {
        "pattern": "**/*.py", "count": 2, "files": ["/src/a.py", "/src/pkg/b.py"]}
    assert await call(tools["find"], pattern="/src/*") == {
        "pattern": "/src/*", "count": 2, "files": ["/src/a.py", "/src/pkg/"]}
    await ws.apply(writes={f"/many/{i:03}.txt": b"" for i in range(250)})
    out = await call(tools["find"], pattern="/many/*.txt")
    assert (out["count"], len(out["files"]), out["truncated"], out["showing"]) == (250, 200, True, 200)


async def test_grep_format(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/a.py", "import os\n\ndef main():\n    os.exit(1)\n")
    await ws.write_file("/b.txt", "OS is fine\n")
    assert await call(tools["grep"], query="os") == snapshot({
        "query": "os", "filesSearched": 2, "filesWithMatches": 2, "totalMatches": 3,
        "matches": ["/a.py:1: import os", "/a.py:4:     os.exit(1)", "/b.txt:1: OS is fine"]})
    assert (await call(tools["grep"], query="os", caseSensitive=True))["totalMatches"] == 2
    assert await call(tools["grep"], query="exit(1)", fixedString=True, include="**/*.py", contextLines=1) == {
        "query": "exit(1)", "filesSearched": 1, "filesWithMatches": 1, "totalMatches": 1,
        "matches": [{"file": "/a.py", "line": 4, "context": "  3\tdef main():\n> 4\t    os.exit(1)\n  5\t"}]}
    assert await call(tools["grep"], query="(") == {"error": "Invalid regex: ("}


async def test_a_catastrophic_pattern_is_stopped_and_the_next_search_works(ws: Workspace,
                                                                           tools: dict[str, Tool]) -> None:
    # (x+x+)+y over 5,000 x's backtracks for ages on a plain engine: it would hold the event loop.
    await ws.write_file("/x.txt", "x" * 5000)
    with anyio.fail_after(30):  # a guard against a hang, far above the 1 s budget
        out = await call(tools["grep"], query="(x+x+)+y")
    assert out == {"error": "the pattern '(x+x+)+y' took longer than 1 s to match: use a simpler one (or fixedString)"}
    assert (await call(tools["grep"], query="x{3}"))["totalMatches"] == 1


async def test_grep_limits(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/many.txt", "hit\n" * 300)
    await ws.write_file("/huge.txt", "hit\n" * 300_000)
    out = await call(tools["grep"], query="hit")
    assert (out["totalMatches"], len(out["matches"]), out["truncated"]) == (200, 200, True)
    assert (out["filesSkipped"], out["note"]) == (1, "1 file(s) skipped (larger than 1 MB)")


async def test_delete(ws: Workspace, tools: dict[str, Tool]) -> None:
    await ws.write_file("/d/x.txt", "")
    assert await call(tools["delete"], path="/d") == {"error": "ENOTEMPTY: directory not empty: /d"}
    assert await call(tools["delete"], path="/d", recursive=True) == {"deleted": "/d"}
    assert await call(tools["delete"], path="/never") == {"deleted": "/never"}
    assert await call(tools["delete"], path="/", recursive=True) == {"error": "EPERM: cannot remove the root directory"}


async def test_traversal_through_the_tools_stays_inside(ws: Workspace, tools: dict[str, Tool]) -> None:
    assert await call(tools["read"], path="../../etc/passwd") == {"error": "File not found: ../../etc/passwd"}
    await call(tools["write"], path="../../../tmp/escape.txt", content="inside")
    assert [f.path for f in await ws.glob("**")] == ["/tmp", "/tmp/escape.txt"]
    out = await call(tools["read"], path="/tmp/../../tmp/escape.txt")
    assert out["content"] == "1\tinside"


class MemoryFiles:
    """A dict as storage: only what the read tool needs."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    async def read_file(self, path: str) -> str | None:
        return self.files.get(path)

    async def read_bytes(self, path: str) -> bytes | None:
        text = self.files.get(path)
        return None if text is None else text.encode()

    async def stat(self, path: str) -> FileInfo | None:
        text = self.files.get(path)
        return None if text is None else FileInfo(path, path.rsplit("/", 1)[-1], "file", "text/plain",
                                                  len(text.encode()), 0.0, 0.0)


async def test_a_tool_over_custom_operations() -> None:
    read = create_read_tool(ops=MemoryFiles({"/hello.txt": "hi\nthere"}))
    assert await call(read, path="/hello.txt") == {"path": "/hello.txt", "content": "1\thi\n2\tthere",
                                                    "totalLines": 2}
    assert await call(read, path="/other.txt") == {"error": "File not found: /other.txt"}


def test_older_file_outputs_keep_their_note_but_not_the_file() -> None:
    from think.context.convert import convert_messages
    from think.messages import Message

    output = {"type": "file", "kind": "image", "mediaType": "image/png", "text": "Read /a.png (image/png, 32 B).",
              "data": "data:image/png;base64,AAAA"}
    message = Message.from_json({"id": "m1", "role": "assistant", "parts": [
        {"type": "tool-read", "toolCallId": "c1", "state": "output-available", "input": {"path": "/a.png"},
         "output": output}]})
    old, _ = convert_messages([message], truncate=True)
    note = "Read /a.png (image/png, 32 B). (no longer attached)"
    assert old[1] == ToolMessage((ToolResultContent("c1", "read", note),))
    assert len(old) == 2
    recent, _ = convert_messages([message], truncate=False)
    assert recent[-1] == UserMessage(
        (FileContent("image/png", "data:image/png;base64,AAAA", None),))
