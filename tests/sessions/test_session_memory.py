"""A session nobody refers to any more is freed at once, with every message of its window."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from think import Message
from think.errors import StorageError
from think.sessions import MIGRATIONS, Session
from think.sessions.compaction import Compactor
from think.storage import Database, migrate


def test_a_dropped_session_and_its_messages_are_freed_without_the_cyclic_collector(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    migrate(db, MIGRATIONS)
    Session(db).add_messages([Message.user(f"m{i}", id=f"m{i}") for i in range(20)])
    session = Session(db)
    session.compaction.view()  # the model's view cached too
    alive = weakref.ref(session)
    assert len(session.history()) == 20
    window = weakref.ref(session._win())  # what holds the messages in memory
    enabled = gc.isenabled()
    gc.disable()
    try:
        del session
        assert alive() is None and window() is None  # reference counting alone freed them
    finally:
        if enabled:
            gc.enable()


def test_a_compactor_outliving_its_session_says_so(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    migrate(db, MIGRATIONS)
    compactor: Compactor = Session(db).compaction
    with pytest.raises(StorageError, match="no longer exists"):
        compactor.all()
