"""`paused_collector`: a burst of objects is not traversed by the young collections afterwards."""

from __future__ import annotations

import gc
import weakref

from think._gc import paused_collector


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_what_a_burst_built_joins_the_long_lived_objects() -> None:
    gc.collect()
    with paused_collector():
        assert not gc.isenabled()
        built = [[n] for n in range(20_000)]
    assert gc.isenabled()
    # Without the move, the next young collection visits every list just built and the middle
    # generation gets them (visited again later); with it they are with the oldest objects.
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(item) in oldest for item in built[::1000])


def test_a_cycle_dropped_after_the_burst_is_still_collected() -> None:
    with paused_collector():
        a, b = Node(), Node()
        a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    assert gone() is not None  # a cycle: reference counting alone cannot free it
    gc.collect()
    assert gone() is None


def test_a_nested_pause_leaves_the_collector_off() -> None:
    with paused_collector():
        with paused_collector():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
