"""Each test counts side effects in its own file, and starts from a full grant."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.actions.agents import CodeShop, Shop
from tests.chat.live_server import Connect, LiveServer, connector, serve_in_thread
from think.runtime import EmbeddedRuntime
from think.server import create_app


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


@pytest.fixture
def shop_server(tmp_path: Path) -> Iterator[LiveServer]:
    """`Shop` and `CodeShop` on a real uvicorn server."""
    app = create_app([Shop, CodeShop], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        yield live


@pytest.fixture
def shop_connect(shop_server: LiveServer) -> Connect:
    """`async with shop_connect("room") as client:` a client of agent `shop`."""
    return connector(shop_server, "shop")
