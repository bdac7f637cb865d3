"""The npm packages a test folder pins, installed from its lock file when missing or stale."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.system_tools import need


def stale_packages(folder: Path) -> list[str]:
    """The packages `folder/package.json` pins that its node_modules lacks or has in another version."""
    pins = dict(json.loads((folder / "package.json").read_text())["dependencies"])
    stale = []
    for name, version in pins.items():
        manifest = folder / "node_modules" / name / "package.json"
        installed = json.loads(manifest.read_text()).get("version") if manifest.exists() else None
        if installed != version:
            stale.append(f"{name}@{version} (installed: {installed})")
    return stale


def ensure_npm_packages(folder: Path, *, purpose: str) -> None:
    """Run `npm ci` in `folder` when a pinned package is missing or stale; fail the test when that
    does not make node_modules match package.json."""
    if not stale_packages(folder):
        return
    npm = need("npm", purpose=purpose)
    proc = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                          cwd=folder, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        pytest.fail(f"`npm ci` in {folder} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}",
                    pytrace=False)
    if stale := stale_packages(folder):
        pytest.fail(f"after `npm ci`, {folder}/node_modules does not match package.json: {', '.join(stale)}",
                    pytrace=False)
