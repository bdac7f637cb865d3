"""Extra chunks in the running turn's stream: data parts a tool or a hook adds to the reply.

    await self.write_data("weather", {"city": "Lisbon", "sky": "clear"})     # a `data-weather` part
    await self.write_data("status", {"step": 2}, transient=True)             # sent, not kept

The runner binds its chunk writer to the turn's task context (`writing`); tools and hooks run in
that context, so `write_data` finds the turn it belongs to, for the agent it is called on (a
parent's tool that drives a child's turn writes to the parent's turn). A data part goes through
the same path as the model's chunks: folded into the reply (transient ones are not), buffered for
resume, sent to every tab, and forwarded by agent tools to the parent's clients.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from think.errors import ProtocolError
from think.messages import JSONObject, new_id
from think.protocol.limits import IN_PART, check_depth

Emit = Callable[[JSONObject], Awaitable[None]]

_WRITERS: contextvars.ContextVar[dict[int, Emit] | None] = contextvars.ContextVar("think_turn_writers", default=None)


@contextmanager
def writing(agent: object, emit: Emit) -> Iterator[None]:
    """Within the block (and the tasks it starts), `write_data` on `agent` writes through `emit`."""
    token = _WRITERS.set({**(_WRITERS.get() or {}), id(agent): emit})
    try:
        yield
    finally:
        _WRITERS.reset(token)


def in_turn_writer(agent: object) -> Emit | None:
    return (_WRITERS.get() or {}).get(id(agent))


async def write_data(agent: object, name: str, data: Any, *, id: str | None = None, transient: bool = False) -> bool:
    """Add a `data-<name>` part to `agent`'s running turn; False when this code runs in none.

    A part with an `id` replaces the earlier part of the same name and id (a progress bar that
    moves); `transient` parts reach clients (`onData`) but not the stored reply. `data` nested
    deeper than a part's field may be (`think.protocol.limits`) raises `TooDeep`.
    """
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise ProtocolError(f"a data part name is a non-empty word, not {name!r}")
    check_depth(data, f"The data of data-{name}", at=IN_PART)
    emit = in_turn_writer(agent)
    if emit is None:
        return False
    chunk: JSONObject = {"type": f"data-{name}", "id": id or new_id(12), "data": data}
    if transient:
        chunk["transient"] = True
    await emit(chunk)
    return True
