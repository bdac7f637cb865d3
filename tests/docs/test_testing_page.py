"""docs/testing.md works as written: its files are a test suite, run with pytest as a reader would.

`record.py` records against the real OpenAI adapter, pointed at a local fake of the OpenAI API
(no network, no key), and `test_replay.py` replays that recording.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.models.fake_llm_server import FakeLLMServer, serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "testing.md"
FENCE = re.compile(r'^```(\w+) title="([^"]+)"\n(.*?)^```$', re.MULTILINE | re.DOTALL)
PROVIDER_SETTINGS = ("THINK_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GEMINI_API_KEY",
                     "GOOGLE_API_KEY")


@pytest.fixture
def fake_openai() -> Iterator[FakeLLMServer]:
    with serve_in_thread(FakeLLMServer()) as server:
        yield server


def test_the_pages_files_record_and_pass_as_a_test_suite(tmp_path: Path, fake_openai: FakeLLMServer) -> None:
    files = {title: code for _, title, code in FENCE.findall(PAGE.read_text(encoding="utf-8"))}
    assert sorted(files) == ["pyproject.toml", "record.py", "recorder.py", "test_agent.py", "test_replay.py",
                             "test_server.py"]
    for title, code in files.items():
        (tmp_path / title).write_text(code, encoding="utf-8")
    env = {**{k: v for k, v in os.environ.items() if k not in PROVIDER_SETTINGS and k != "PYTEST_ADDOPTS"},
           "PYTHONPATH": str(ROOT)}

    recorded = subprocess.run([sys.executable, "record.py"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, env={**env, "OPENAI_API_KEY": "sk-test",
                                                "OPENAI_BASE_URL": fake_openai.url + "/v1"})
    assert recorded.returncode == 0, recorded.stderr
    [request] = fake_openai.requests
    assert request.body["model"] == "gpt-4.1-mini"
    recording = json.loads((tmp_path / "recording.json").read_text(encoding="utf-8"))
    assert len(recording) == 1 and recording[0]["text"] and recorded.stdout.strip() == recording[0]["text"]

    suite = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert suite.returncode == 0, suite.stdout + suite.stderr
    assert re.search(r"\b6 passed\b", suite.stdout), suite.stdout
