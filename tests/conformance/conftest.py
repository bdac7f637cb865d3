"""Node-side helpers for the conformance tests: the npm `ai` package and `ui_chunks.mjs`.

`node_modules` is installed on demand with `npm ci` from the committed lock file. A failed install
fails the tests loudly; a missing Node or npm skips them with the reason, and fails them under CI
(`tests.system_tools`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.npm import ensure_npm_packages
from tests.system_tools import need

HERE = Path(__file__).parent
SCRIPT = HERE / "ui_chunks.mjs"


def _tool(name: str) -> str:
    return need(name, purpose="the UI chunk conformance tests")


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """`tests/conformance/node_modules` with the pinned `ai`, running `npm ci` when it is missing or stale."""
    _tool("node")
    ensure_npm_packages(HERE, purpose="the UI chunk conformance tests")
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
