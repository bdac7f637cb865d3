"""docs/tutorial.md works as written: every block is run as a reader would run it.

`bakery.py` blocks replace the file; every other Python block is a script run with `python` in
the same folder, and the `output` block after it is what it must print. The served agent of
steps 5 and 6 runs under the real `think serve`, with an OpenAI key and base URL that point at a
local fake of the OpenAI API, so the real provider adapter is what answers.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.models.fake_llm_server import FakeLLMServer, serve_in_thread
from tests.submissions.server_process import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
PROVIDER_SETTINGS = ("THINK_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GEMINI_API_KEY",
                     "GOOGLE_API_KEY", "OLLAMA_HOST")
SERVED_URL = "ws://localhost:8000"


@dataclass(frozen=True)
class Block:
    language: str
    title: str | None
    code: str


def blocks() -> list[Block]:
    found = []
    for language, info, code in FENCE.findall(PAGE.read_text(encoding="utf-8")):
        title = re.search(r'title="([^"]+)"', info)
        found.append(Block(language, title.group(1) if title else None, code))
    return found


def scripts() -> list[tuple[Block, Block | None]]:
    """Every Python block, with the `output` block that follows it (if any)."""
    page = blocks()
    pairs = []
    for index, block in enumerate(page):
        if block.language != "python":
            continue
        after = page[index + 1] if index + 1 < len(page) else None
        pairs.append((block, after if after is not None and after.title == "output" else None))
    return pairs


def environment(**extra: str) -> dict[str, str]:
    """A reader's shell: no model configured (unless `extra` configures one), this checkout importable."""
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_SETTINGS}
    return {**env, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **extra}


def run_script(folder: Path, name: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, name], cwd=folder, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, f"python {name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_page_has_the_steps_it_promises() -> None:
    titles = [b.title for b, _ in scripts()]
    assert titles.count("bakery.py") == 4
    assert [t for t in titles if t != "bakery.py"] == ["first.py", "tools.py", "approvals.py", "memory.py",
                                                         "client.py", "pinned.py"]
    commands = [line for b in blocks() if b.language == "bash" for line in b.code.splitlines()]
    assert "think serve bakery.py:Bakery" in commands


def test_every_script_prints_what_the_page_says(tmp_path: Path) -> None:
    env = environment()
    ran = 0
    for block, output in scripts():
        assert block.title is not None, f"a Python block without a file name:\n{block.code}"
        (tmp_path / block.title).write_text(block.code, encoding="utf-8")
        if block.title == "bakery.py" or SERVED_URL in block.code:
            continue  # the agent itself; the client needs the server (the next test)
        printed = run_script(tmp_path, block.title, env)
        if output is not None:
            assert printed == output.code, f"python {block.title} printed:\n{printed}"
        ran += 1
    assert ran == 5


@contextmanager
def think_serve(folder: Path, command: str, env: dict[str, str]) -> Iterator[ServerProcess]:
    """The page's `think serve …` command, run in the reader's folder on a free port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    args = command.split()[2:]
    process = subprocess.Popen([sys.executable, "-m", "think.cli", "serve", *args, "--port", str(port)],
                               cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    server = ServerProcess(process, port)  # type: ignore[arg-type]
    try:
        server.wait_ready("/_think/info")
        yield server
    finally:
        server.stop()
        assert process.stderr is not None
        process.stderr.close()


@pytest.fixture
def fake_openai() -> Iterator[FakeLLMServer]:
    with serve_in_thread(FakeLLMServer()) as server:
        yield server


def test_the_served_agent_answers_the_client_through_a_real_provider_adapter(
        tmp_path: Path, fake_openai: FakeLLMServer) -> None:
    for block, _ in scripts():  # the final bakery.py, the client and the pinned class
        (tmp_path / str(block.title)).write_text(block.code, encoding="utf-8")
    client = next(b for b, _ in scripts() if SERVED_URL in b.code)
    env = environment(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=fake_openai.url + "/v1",
                      THINK_DATA_DIR=str(tmp_path / "served"))

    with think_serve(tmp_path, "think serve bakery.py:Bakery", env) as server:
        info = httpx.get(server.http + "/_think/info", timeout=5).json()
        assert info["agents"] == ["bakery"] and info["model"].startswith("openai:") and not info["demo"]
        (tmp_path / "client.py").write_text(client.code.replace(SERVED_URL, server.ws), encoding="utf-8")
        assert run_script(tmp_path, "client.py", env) == "completed\n"
    [request] = [r for r in fake_openai.requests if r.path.endswith("/chat/completions")]
    system = request.body["messages"][0]
    assert system["role"] == "system" and "Rosa's Bakery" in system["content"]
    assert {t["function"]["name"] for t in request.body["tools"]} >= {"price", "place_order", "set_context"}
    assert request.body["messages"][-1] == {"role": "user", "content": "How much is a croissant?"}
    assert request.headers["authorization"] == "Bearer sk-test"

    fake_openai.reset()
    with think_serve(tmp_path, "think serve pinned.py:PinnedBakery", env) as server:
        info = httpx.get(server.http + "/_think/info", timeout=5).json()
        assert (info["agents"], info["model"]) == (["pinned-bakery"], "openai:gpt-4.1-mini")
