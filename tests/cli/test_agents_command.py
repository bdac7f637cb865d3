"""`think agents` and `think show` over a data directory that real turns wrote."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.browse.agents import fill
from tests.cli.conftest import run_think

Filled = tuple[Path, dict[str, list[str]]]


@pytest.fixture
def filled(data_dir: Path) -> Filled:
    return data_dir, anyio.run(fill, data_dir)


def test_agents_lists_counts_then_instances(filled: Filled) -> None:
    data_dir, _ = filled
    done = run_think("agents", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["counter", "1", "instance"]
    assert lines[1].split()[:3] == ["notes", "3", "instances"]
    alice = next(line for line in lines if line.strip().startswith("alice "))
    assert "4 messages" in alice and '"Plan the offsite"' in alice
    bob = next(line for line in lines if line.strip().startswith("bob "))
    assert "2 messages" in bob and '"Name a cat"' in bob
    assert any(line.strip().startswith("c1 ") and "(no messages)" in line for line in lines)


def test_show_prints_the_transcript_with_branch_markers(filled: Filled) -> None:
    data_dir, ids = filled
    done = run_think("show", "notes/bob", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.splitlines()[0] == "notes/bob"
    assert "  Name a cat" in out and "  Noted: Name a cat" in out
    assert f"[{ids['answers'][2]}]  ⑂ branch 3/3 (others: {ids['answers'][0]}, {ids['answers'][1]})" in out
    other = run_think("show", "notes/bob", "--branch", ids["answers"][0], "--data-dir", str(data_dir))
    assert other.returncode == 0, other.stderr
    assert other.stdout.splitlines()[0] == "notes/bob  (not the active branch)"
    assert f"[{ids['answers'][0]}]  ⑂ branch 1/3" in other.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["show", "notes/zed"], "think: error: agent 'notes' has no instance 'zed' in "),
    (["show", "nobody/x"], "think: error: no agent 'nobody' in "),
    (["show", "notes"], "think: error: 'notes' is not an agent address. Fix: write it as AGENT/NAME"),
    (["show", "notes/bob", "--branch", "nope"], "think: error: notes/bob has no message 'nope'"),
])
def test_show_refuses_what_is_not_there_in_one_line(filled: Filled, args: list[str], message: str) -> None:
    data_dir, _ = filled
    done = run_think(*args, "--data-dir", str(data_dir))
    assert done.returncode == 2
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_data_dir_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    for args in (["agents"], ["show", "notes/alice"]):
        done = run_think(*args, "--data-dir", str(tmp_path / "nowhere"))
        assert done.returncode == 2
        assert done.stderr.startswith(f"think: error: data directory {tmp_path / 'nowhere'} does not exist. Fix: ")
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_an_empty_data_dir_has_no_agents_yet(tmp_path: Path) -> None:
    done = run_think("agents", "--data-dir", str(tmp_path))
    assert (done.returncode, done.stdout) == (0, "no agents yet\n")
