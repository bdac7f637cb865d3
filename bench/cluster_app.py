"""The agents `bench/cluster.py` serves with `think serve --database` (and embedded, to compare).

`BenchChat` answers at once (a dozen words); `Slow` streams 20 words 20 ms apart, for fan-out.
"""

from __future__ import annotations

import anyio

from think import Think
from think.models.base import ModelRequest
from think.models.events import Finish, StreamEvent, TextDelta
from think.testing.models import ScriptedModel

ANSWER = "Sure, here is a short answer of about a dozen words for you."


class BenchChat(Think):
    model = ScriptedModel(lambda request: ANSWER)

    def get_model(self) -> ScriptedModel:
        return self.model


class SlowModel:
    model_id = "slow"

    async def stream(self, request: ModelRequest):  # type: ignore[no-untyped-def]
        for k in range(20):
            await anyio.sleep(0.02)
            yield TextDelta(f"w{k} ")
        yield Finish("stop")


class Slow(Think):
    def get_model(self) -> SlowModel:
        return SlowModel()


__all__ = ["BenchChat", "Slow", "StreamEvent"]
