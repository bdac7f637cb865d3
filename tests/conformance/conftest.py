"""Node-side helpers for the conformance tests: the npm `ai` package and `ui_chunks.mjs`.

`node_modules` is installed on demand with `npm ci` from the committed lock file. A failed install
fails the tests loudly; a missing Node or npm skips them with the reason, and fails them under CI
(`tests.system_tools`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.system_tools import need

HERE = Path(__file__).parent
SCRIPT = HERE / "ui_chunks.mjs"


def _pinned_ai_version() -> str:
    return str(json.loads((HERE / "package.json").read_text())["dependencies"]["ai"])


def _installed_ai_version() -> str | None:
    manifest = HERE / "node_modules" / "ai" / "package.json"
    if not manifest.exists():
        return None
    return str(json.loads(manifest.read_text()).get("version"))


def _tool(name: str) -> str:
    return need(name, purpose="the UI chunk conformance tests")


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """`tests/conformance/node_modules` with the pinned `ai`, running `npm ci` when it is missing or stale."""
    _tool("node")
    if _installed_ai_version() != _pinned_ai_version():
        npm = _tool("npm")
        proc = subprocess.run(
            [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=HERE, capture_output=True, text=True, timeout=600, check=False,
        )
        if proc.returncode != 0:
            pytest.fail(f"`npm ci` in {HERE} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}",
                        pytrace=False)
        if _installed_ai_version() != _pinned_ai_version():
            pytest.fail(f"`npm ci` installed ai {_installed_ai_version()}, package.json pins "
                        f"{_pinned_ai_version()}", pytrace=False)
    return HERE / "node_modules"


def _run_ui_chunks(streams: list[dict[str, Any]]) -> dict[str, Any]:
    proc = subprocess.run(
        [_tool("node"), str(SCRIPT)],
        input=orjson.dumps({"streams": streams}), cwd=HERE, capture_output=True, timeout=120, check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"ui_chunks.mjs failed (exit {proc.returncode}):\n{proc.stderr.decode(errors='replace')}",
                    pytrace=False)
    result: dict[str, Any] = orjson.loads(proc.stdout)
    return result


@pytest.fixture(scope="session")
def run_ui_chunks(node_modules: Path) -> Callable[[list[dict[str, Any]]], dict[str, Any]]:
    """Runs `ui_chunks.mjs` once over `[{"name", "chunks", "message"?}]`; returns its parsed output."""
    return _run_ui_chunks
