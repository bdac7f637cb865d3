"""Node-side helpers for the conformance tests: the npm `ai` package and `ui_chunks.mjs`.

`node_modules` is installed on demand with `npm ci` from the committed lock file. A missing Node,
npm or registry fails the tests loudly: these checks are part of the acceptance criteria, so
they are never skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

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
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"`{name}` is not on PATH: the UI chunk conformance tests need Node.js and npm",
                    pytrace=False)
    return path


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
