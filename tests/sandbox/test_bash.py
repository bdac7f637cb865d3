"""The `bash` tool: a real sandboxed bash over a snapshot of the workspace, changes written back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.conftest import needs_sandbox
from think import Think, open_agent
from think.sandbox.bash import BashOptions, create_bash_tool, run_bash
from think.sandbox.bwrap import MAX_SCRIPT_CHARS
from think.testing.models import ScriptedModel, call
from think.tools import ToolContext, run_tool
from think.workspace import Workspace, WorkspaceChange

pytestmark = needs_sandbox

NOTHING_CHANGED = {"created": [], "updated": [], "deleted": [], "directoriesCreated": [], "directoriesDeleted": []}


async def test_output_format_and_write_back(ws: Workspace) -> None:
    await ws.write_file("/a.txt", "one\n")
    await ws.write_file("/old/gone.txt", "bye")
    await ws.mkdir("/empty")
    events: list[WorkspaceChange] = []
    ws.on_change(events.append)
    script = ("cat a.txt; echo two >> a.txt; mkdir -p new/deeper; printf 'x' > new/file.txt; "
              "rm -r old empty; mkdir made; echo oops >&2; exit 3")
    out = await run_bash(ws, script)
    assert out == {
        "stdout": "one\n", "stderr": "oops\n", "exitCode": 3,
        "changedFiles": {"created": ["/new/file.txt"], "updated": ["/a.txt"], "deleted": ["/old/gone.txt"],
                         "directoriesCreated": ["/made", "/new", "/new/deeper"],
                         "directoriesDeleted": ["/empty", "/old"]}}
    assert await ws.read_file("/a.txt") == "one\ntwo\n"
    assert [f.path for f in await ws.glob("**")] == ["/a.txt", "/made", "/new", "/new/deeper", "/new/file.txt"]
    assert ("update", "/a.txt") in [(e.kind, e.path) for e in events]


async def test_binary_files_and_unchanged_files(ws: Workspace) -> None:
    await ws.write_file("/bytes.bin", bytes(range(256)))
    await ws.write_file("/same.txt", "same")
    out = await run_bash(ws, "cat same.txt > /dev/null; touch same.txt; xxd -p bytes.bin | head -c 8; "
                             "printf '\\x00\\xff' > made.bin")
    assert out["stdout"] == "00010203"
    assert out["changedFiles"]["created"] == ["/made.bin"] and out["changedFiles"]["updated"] == []
    assert await ws.read_bytes("/made.bin") == b"\x00\xff"
    assert await ws.read_bytes("/bytes.bin") == bytes(range(256))


async def test_cwd(ws: Workspace) -> None:
    await ws.mkdir("/project/src", recursive=True)
    assert (await run_bash(ws, "pwd; touch here", cwd="/project/src"))["stdout"] == "/project/src\n"
    assert await ws.exists("/project/src/here")
    assert await run_bash(ws, "pwd", cwd="/nowhere") == {"error": "Directory not found: /nowhere"}
    assert (await run_bash(ws, "pwd", cwd="/tmp"))["stdout"] == "/tmp\n"


async def test_large_files_are_skipped_listed_and_protected(ws: Workspace) -> None:
    await ws.write_file("/data/big.csv", b"1," * 600_000)
    await ws.write_file("/data/small.csv", "1,2\n")
    out = await run_bash(ws, "ls data; echo replaced > data/big.csv; rm -r data")
    assert out["stdout"] == "small.csv\n"
    assert out["skippedFiles"] == ["/data/big.csv"]
    assert "not mounted" in out["note"]
    assert out["errors"] == ["/data: not deleted, it still holds files that were not mounted"]
    assert out["changedFiles"]["deleted"] == ["/data/small.csv"]
    assert len(await ws.read_bytes("/data/big.csv") or b"") == 1_200_000


async def test_writing_over_a_skipped_file_is_refused(ws: Workspace) -> None:
    await ws.write_file("/big.bin", b"x" * 1_100_000)
    out = await run_bash(ws, "echo small > big.bin")
    assert out["errors"] == ["/big.bin: not written back, the workspace file there was not mounted (protected)"]
    assert len(await ws.read_bytes("/big.bin") or b"") == 1_100_000


async def test_the_sandboxes_own_directories_are_not_synced(ws: Workspace) -> None:
    await ws.write_file("/tmp/kept.txt", "workspace file under /tmp")
    out = await run_bash(ws, "ls /tmp; echo scratch > /tmp/scratch; ls -d /usr /proc /dev > /dev/null")
    assert out["stdout"] == "" and out["changedFiles"] == NOTHING_CHANGED
    assert await ws.read_file("/tmp/kept.txt") == "workspace file under /tmp"


async def test_limits_are_configurable(ws: Workspace) -> None:
    options = BashOptions(max_workspace_files=3, max_workspace_file_bytes=10, max_output_bytes=5)
    await ws.apply(writes={"/1": b"1", "/2": b"2", "/3": b"3", "/4": b"4"})
    out = await run_bash(ws, "printf abcdefgh >&2; printf 1234567; echo 12345678901 > big; touch more",
                         options=options)
    assert (out["stdout"], out["stderr"]) == ("12345\n... (2 B truncated)", "abcde\n... (3 B truncated)")
    assert out["skippedFiles"] == ["/4"]
    assert out["errors"] == ["/big: not written back, over the 3-file limit",
                             "/more: not written back, over the 3-file limit"]


async def test_a_locked_directory_is_still_written_back(ws: Workspace) -> None:
    out = await run_bash(ws, "mkdir locked; echo x > locked/f; chmod 000 locked")
    assert out["changedFiles"]["created"] == ["/locked/f"]
    assert await ws.read_file("/locked/f") == "x\n"


async def test_without_root_a_private_directory_stands_in_for_the_tmpfs(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # the code path of a laptop user
    await ws.write_file("/a.txt", "hi")
    out = await run_bash(ws, "cat a.txt; mkdir locked; echo x > locked/f; chmod 000 locked; "
                             "head -c 2000000 /dev/zero > big")
    assert out["stdout"] == "hi"
    assert out["changedFiles"]["created"] == ["/locked/f"]
    assert out["errors"] == ["/big: not written back, larger than 1.0 MB"]
    assert await run_bash(ws, "true", options=BashOptions(network=["example.com"])) == {
        "error": "bash is not available here: a network allowlist needs root and nsenter (util-linux)"}


async def test_script_and_option_validation(ws: Workspace) -> None:
    out = await run_bash(ws, "#" * (MAX_SCRIPT_CHARS + 1))
    assert out["error"].startswith(f"The script is {MAX_SCRIPT_CHARS + 1} characters long")
    with pytest.raises(ValueError, match="only http and https"):
        BashOptions(network=["ftp://example.com"])
    tool = create_bash_tool(ws)
    assert tool.check_input({"script": "true"}) == {"script": "true", "cwd": "/"}
    with pytest.raises(ValueError, match="script"):
        tool.check_input({"cwd": "/"})
    result = await run_tool(tool, {"script": "echo hi", "cwd": "/"}, ToolContext(tool_call_id="1", tool_name="bash"))
    assert result.output["stdout"] == "hi\n"


class Shell(Think):
    model = ScriptedModel([
        [call("bash", script="echo hello > greeting.txt && python3 -c 'print(6*7)'", id="b1")],
        "Done.",
    ])

    def get_model(self) -> ScriptedModel:
        return self.model


async def test_through_an_agent_turn(data_dir: Path) -> None:
    async with open_agent(Shell, "sh", data_dir=data_dir) as agent:
        result = await agent.save_messages(["Say hello in a file."])
        assert result.status == "completed"
        [part] = [p for p in agent.messages[-1].to_json()["parts"] if p["type"] == "tool-bash"]
        output: dict[str, Any] = part["output"]
        assert (output["stdout"], output["exitCode"]) == ("42\n", 0)
        assert output["changedFiles"]["created"] == ["/greeting.txt"]
        assert await agent.workspace.read_file("/greeting.txt") == "hello\n"
        assert (await agent.list_workspace())[0]["name"] == "greeting.txt"
