"""A machine without Chromium or bubblewrap gets skips with a reason, and CI gets failures.

Each case runs real test files of this suite in a pytest subprocess with the tool hidden
(`THINK_TEST_HIDE_TOOLS`), once as a developer would and once with `CI=true`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.system_tools import need

ROOT = Path(__file__).parents[1]
CASES = {
    "chromium": "tests/ui/test_chat_page.py::test_a_message_streams_a_tool_call_and_a_markdown_answer",
    "bwrap": "tests/sandbox/test_bash.py::test_output_format_and_write_back",
}


def _run(test_id: str, hide: str, *, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env |= {"THINK_TEST_HIDE_TOOLS": hide, "PYTHONPATH": str(ROOT)}
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", test_id],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("tool", sorted(CASES))
def test_a_missing_system_tool_skips_with_a_one_line_reason(tool: str) -> None:
    proc = _run(CASES[tool], tool, ci=False)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "1 skipped" in proc.stdout and "error" not in proc.stdout.lower(), proc.stdout[-2000:]
    [reason] = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert f"{tool} is not" in reason or f"needs {tool}" in reason, reason


@pytest.mark.parametrize("tool", sorted(CASES))
def test_under_ci_a_missing_system_tool_fails_the_run(tool: str) -> None:
    proc = _run(CASES[tool], tool, ci=True)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "skipped" not in proc.stdout and "CI=true" in proc.stdout, proc.stdout[-2000:]


def test_a_present_tool_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THINK_TEST_HIDE_TOOLS", raising=False)
    assert Path(need("sh", purpose="this test")).name == "sh"
    monkeypatch.setenv("THINK_TEST_HIDE_TOOLS", "sh")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="sh is not installed, needed by this test"):
        need("sh", purpose="this test")
