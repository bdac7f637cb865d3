"""The model an agent class uses, found without waking any of its instances.

`think serve` prints it and the web UI's `/_think/info` shows it. Starting an instance to ask it
would run its start-up work (recovering an interrupted turn, draining submissions) on behalf of
a caller that only wants a label: a throwaway instance over an in-memory database answers instead,
so no agent's file is opened and nothing of its runtime starts.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from think.models.base import Model
from think.storage import Database, migrate

if TYPE_CHECKING:
    from think.agent import Think

_URL = re.compile(r"[A-Za-z][\w+.-]*://[^\s#)\],]*#?")


def model_of(cls: type[Think], name: str = "default") -> Model:
    """`get_model()` of a fresh `cls` instance named `name`, resolved; its state is the class's
    `initial_state` (the instance is never started, so `on_start` does not run)."""
    db = Database(":memory:")
    try:
        migrate(db, cls.all_migrations())
        agent = cls(name, db=db)
        return agent.resolve_model(agent.get_model())
    finally:
        db.close()


def public_label(model_id: str) -> str:
    """`model_id` as browsers may see it: any URL in it is left out (a base URL can hold a key, or
    name an internal host), so `openai-compatible:http://host/v1#m` reads `openai-compatible:m`."""
    return _URL.sub("", model_id).strip() or "model"
