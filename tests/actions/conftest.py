"""Each test counts side effects in its own file, and starts from a full grant."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.actions.agents import Shop


@pytest.fixture(autouse=True)
def effects_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "effects.txt"
    previous = os.environ.get("THINK_ACTION_EFFECTS")
    os.environ["THINK_ACTION_EFFECTS"] = str(path)
    Shop.granted, Shop.clock_offset = None, 0.0
    try:
        yield path
    finally:
        Shop.granted, Shop.clock_offset = None, 0.0
        if previous is None:
            os.environ.pop("THINK_ACTION_EFFECTS", None)
        else:
            os.environ["THINK_ACTION_EFFECTS"] = previous
