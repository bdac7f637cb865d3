"""Agents for the operations tests of `think serve`: the model comes from `THINK_MODEL`.

`Plain` keeps `get_model()` as it is (so `THINK_MODEL` picks the model) and retries a failed model
call once (the default is twice, with a 2 s and a 4 s backoff).
"""

from __future__ import annotations

from think import Think
from think.hooks import TurnConfig, TurnContext


class Plain(Think):
    """Served at `/agents/plain/<name>`."""

    async def before_turn(self, ctx: TurnContext) -> TurnConfig:
        return TurnConfig(max_retries=1)


class Broken(Think):
    """Its `get_model()` itself fails: a bug in the agent, reported as one line."""

    def get_model(self) -> str:
        raise KeyError("MODEL_NAME")
