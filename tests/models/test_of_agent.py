"""`model_of`: an agent class's model, found without waking an instance."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from think import Think
from think.models.of_agent import model_of
from think.runtime.embedded import shared_runtime
from think.testing.models import ScriptedModel


class Described(Think):
    started: ClassVar[int] = 0

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(["hi"])

    async def on_start(self) -> None:
        type(self).started += 1


def test_the_model_is_found_without_starting_or_storing_anything(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a default data directory would be created here
    assert model_of(Described).model_id == ScriptedModel(["hi"]).model_id
    assert Described.started == 0
    assert list(tmp_path.iterdir()) == []
    assert shared_runtime(tmp_path / ".think").live() == []
