"""A data directory filled by real turns (see `tests.browse.agents.fill`)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.browse.agents import fill


@pytest.fixture
def filled(data_dir: Path) -> tuple[Path, dict[str, list[str]]]:
    ids = anyio.run(fill, data_dir)
    return data_dir, ids
