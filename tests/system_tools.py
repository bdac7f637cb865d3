"""The one rule for tests that need a program of the machine (Chromium, bubblewrap, Node, …).

Where the program is missing, the test is skipped with a one-line reason that says what to
install; under CI (`CI=true`) the same absence fails the test instead, so nothing is ever
skipped silently there (`.ci/run` installs every program the suite needs).

`THINK_TEST_HIDE_TOOLS` (comma-separated names) makes the rule treat those programs as
missing: it is how the rule itself is tested, and how to check locally that a machine without
them still gets a clean run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

INSTALL_HINTS = {
    "chromium": "apt-get install chromium, or set THINK_TEST_CHROMIUM",
    "bwrap": "apt-get install bubblewrap",
    "node": "install Node.js 20+",
    "npm": "install npm",
}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def hidden(name: str) -> bool:
    return name in {n.strip() for n in os.environ.get("THINK_TEST_HIDE_TOOLS", "").split(",") if n.strip()}


def missing(what: str) -> NoReturn:
    """Skip the test because `what` is not on this machine; under CI, fail it."""
    if in_ci():
        pytest.fail(f"{what} (CI=true: a missing system tool fails the run)", pytrace=False)
    pytest.skip(what)


def need(name: str, *, purpose: str, path: str | Path | None = None) -> str:
    """The path of the program `name` (looked up on PATH, or at `path` when given); skips or
    fails (see `missing`) when it is absent. `purpose` says which tests need it."""
    found: str | None
    if hidden(name):
        found = None
    elif path is not None:
        found = str(path) if Path(path).is_file() and os.access(path, os.X_OK) else None
    else:
        found = shutil.which(name)
    if found is None:
        where = f" at {path}" if path is not None else ""
        hint = INSTALL_HINTS.get(name, f"install {name}")
        missing(f"{name} is not installed{where}, needed by {purpose} ({hint})")
    return found
