"""`message_concurrency`: which overlapping chat submits answer (the strategies, without a server)."""

from __future__ import annotations

from types import MappingProxyType

import anyio
import pytest

from think.errors import ConfigurationError
from think.turns.concurrency import ConcurrencyPolicy, SubmitAdmission


def test_policies_parse_like_think_and_refuse_unknown_values() -> None:
    assert ConcurrencyPolicy.parse("queue") == ConcurrencyPolicy("queue")
    assert ConcurrencyPolicy.parse("merge").strategy == "merge"
    assert ConcurrencyPolicy.parse("steer").strategy == "steer"
    assert ConcurrencyPolicy.parse({"strategy": "debounce", "debounce": 0.25}) == ConcurrencyPolicy("debounce", 0.25)
    assert ConcurrencyPolicy.parse(MappingProxyType({"strategy": "debounce"})).debounce == 0.75
    for bad in (-5, float("inf"), "soon", True):
        assert ConcurrencyPolicy.parse({"strategy": "debounce", "debounce": bad}).debounce == 0.75


def test_the_old_milliseconds_debounce_still_works_with_a_deprecation_warning() -> None:
    for key in ("debounce_ms", "debounceMs"):
        with pytest.warns(DeprecationWarning, match="debounce"):
            assert ConcurrencyPolicy.parse({"strategy": "debounce", key: 250}) == ConcurrencyPolicy("debounce", 0.25)
    for value in ("fifo", {"strategy": "throttle"}, 3):
        with pytest.raises(ConfigurationError):
            ConcurrencyPolicy.parse(value)  # type: ignore[arg-type]


async def test_only_overlapping_submits_are_subject_to_the_strategy() -> None:
    admission = SubmitAdmission()
    drop = ConcurrencyPolicy("drop")
    first = admission.accept(drop, busy=False, generation=0)
    assert first is not None and not first.overlapping
    assert admission.accept(drop, busy=False, generation=0) is None  # the first is still open
    admission.finished(first)
    assert admission.accept(drop, busy=True, generation=0) is None  # another turn runs
    assert admission.accept(drop, busy=False, generation=0) is not None


async def test_latest_keeps_only_the_newest_overlapping_submit() -> None:
    admission = SubmitAdmission()
    latest = ConcurrencyPolicy("latest")
    running = admission.accept(latest, busy=False, generation=0)
    second = admission.accept(latest, busy=False, generation=0)
    third = admission.accept(latest, busy=False, generation=0)
    assert running and second and third
    assert not admission.superseded(latest, running)  # it was not overlapping: it is already answering
    assert admission.superseded(latest, second) and not admission.superseded(latest, third)
    assert admission.admit(latest, running) is None
    assert admission.admit(ConcurrencyPolicy("queue"), second) is None


async def test_a_clear_starts_a_new_generation_that_does_not_overlap_the_old_one() -> None:
    admission = SubmitAdmission()
    latest = ConcurrencyPolicy("latest")
    admission.accept(latest, busy=False, generation=0)
    old = admission.accept(latest, busy=False, generation=0)
    fresh = admission.accept(latest, busy=False, generation=1)
    assert old and fresh and old.overlapping and not fresh.overlapping
    assert not admission.superseded(latest, old)  # a newer submit of another generation does not count


async def test_admitted_turns_answer_and_superseded_ones_do_not() -> None:
    admission = SubmitAdmission()
    merge = ConcurrencyPolicy("merge")
    admission.accept(merge, busy=True, generation=0)
    second = admission.accept(merge, busy=True, generation=0)
    third = admission.accept(merge, busy=True, generation=0)
    assert second and third
    admit_second, admit_third = admission.admit(merge, second), admission.admit(merge, third)
    assert admit_second is not None and admit_third is not None
    assert await admit_second() is False
    assert await admit_third() is True


async def test_debounce_waits_for_quiet_and_a_newer_submit_supersedes_a_waiting_one() -> None:
    admission = SubmitAdmission()
    debounce = ConcurrencyPolicy("debounce", 0.2)
    first = admission.accept(debounce, busy=True, generation=0)
    assert first is not None
    admit_first = admission.admit(debounce, first)
    assert admit_first is not None
    outcome: list[tuple[bool, float]] = []

    async def wait_first() -> None:
        started = anyio.current_time()
        outcome.append((await admit_first(), anyio.current_time() - started))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait_first)
        await anyio.sleep(0.05)  # the first is waiting out its quiet window when the second arrives
        second = admission.accept(debounce, busy=True, generation=0)
    assert outcome[0][0] is False and outcome[0][1] < 0.15  # superseded at once, not after its window
    assert second is not None
    admit_second = admission.admit(debounce, second)
    assert admit_second is not None
    started = anyio.current_time()
    assert await admit_second() is True
    waited = anyio.current_time() - started
    assert 0.1 < waited < 0.5  # until 200 ms after it was sent
