"""`paused_collector()`: build many objects at once without the cyclic collector running over them.

Decoding a long transcript creates ~10 objects a message; none can be garbage while they are
built, yet the collector runs again and again (each pass over every young object, and the older
generations more and more often), which triples the time. Pausing it for such a burst is safe:
the objects are counted as usual once it is back on.

When the collector comes back on, the burst's objects are moved to its oldest generation
(`gc.freeze()` then `gc.unfreeze()`: two list splices, no object visited) instead of being
traversed by the next young collection and again by the middle one, only to survive both. They
are examined at the next full collection, as every long-lived object is; objects nothing refers
to any more are freed at once by reference counting, whatever their generation.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_collector() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (left as it was if already paused)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()  # every tracked object to the permanent generation…
            gc.unfreeze()  # …and from there to the oldest one, without traversing any
            gc.enable()
