"""`think serve` configuration errors: one line on stderr with the fix, exit code 2, no
traceback (`--debug` adds it); checked before any address is printed."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.submissions.server_process import ROOT

PLAIN = "tests.cli.ops_agents:Plain"
OFFLINE = "openai-compatible:http://127.0.0.1:9/v1#m"
"""A model that resolves without any network call (nothing is asked of it here)."""


def serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environment.update({"PYTHONPATH": str(ROOT), "NO_COLOR": "1", "THINK_DATA_DIR": str(tmp_path / "d"),
                        **(env or {})})
    return subprocess.run([sys.executable, "-m", "think.cli", "serve", *args, "--no-ui"], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("think: error: "), result.stderr
    assert "Traceback" not in result.stderr and "ws://" not in result.stderr + result.stdout
    return lines[0]


@pytest.mark.parametrize(("model", "expected"), [
    ("nocolon", ["cannot resolve model id 'nocolon'", "Fix: use <provider>:<model>", "openai-compatible"]),
    ("foo:bar", ["unknown provider 'foo'", "Fix: use <provider>:<model>"]),
    ("openai:gpt-4.1-mini", ["needs OPENAI_API_KEY", "Fix: export OPENAI_API_KEY="]),
])
def test_a_model_that_cannot_be_resolved(tmp_path: Path, model: str, expected: list[str]) -> None:
    line = one_line(serve(tmp_path, PLAIN, env={"THINK_MODEL": model}))
    assert all(part in line for part in expected), line


@pytest.mark.parametrize(("target", "expected"), [
    ("no_such_module", "no module named 'no_such_module'. Fix: check the name"),
    ("missing.py", "no such file: missing.py. Fix: check the path"),
    ("tests.cli.ops_agents:Nope", "'Nope' is no such name in tests.cli.ops_agents. Fix: name an agent class "
                                  "defined there (found: Plain, Broken)"),
    ("tests.cli.test_serve_errors", "no agent class is defined there"),
    ("tests.cli.ops_agents:Broken", "Broken.get_model() failed: KeyError: 'MODEL_NAME'. Fix: fix get_model()"),
])
def test_a_bad_target(tmp_path: Path, target: str, expected: str) -> None:
    line = one_line(serve(tmp_path, target, env={"THINK_MODEL": OFFLINE}))
    assert expected in line, line


def test_a_file_that_fails_to_import(tmp_path: Path) -> None:
    broken = tmp_path / "app.py"
    broken.write_text("from think import Think\n\nclass A(Think):\n    pass\n\nundefined_name\n")
    line = one_line(serve(tmp_path, str(broken)))
    assert "importing" in line and "NameError: name 'undefined_name' is not defined" in line, line
    assert "(--debug shows the traceback)" in line
    shown = serve(tmp_path, str(broken), "--debug")
    assert shown.returncode == 2 and "Traceback" in shown.stderr and "undefined_name" in shown.stderr
    assert shown.stderr.strip().splitlines()[-1].startswith("think: error: importing")


def test_a_port_in_use_is_an_error_before_any_address_is_printed(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = serve(tmp_path, PLAIN, "--port", str(port), env={"THINK_MODEL": OFFLINE})
    line = one_line(result)
    assert f"port {port} on 127.0.0.1 is already in use. Fix: stop the process" in line and "--port 0" in line


def test_an_unknown_protocol(tmp_path: Path) -> None:
    line = one_line(serve(tmp_path, PLAIN, "--protocols", "cf_agent,smoke-signals",
                          env={"THINK_MODEL": OFFLINE}))
    assert "unknown protocol 'smoke-signals'; available: cf_agent, ai-sdk" in line, line
