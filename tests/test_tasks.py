"""`cancel_and_wait`: a background task that absorbs a cancellation still ends."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from think import _tasks
from think._tasks import cancel_and_wait


async def test_a_task_that_absorbs_its_first_cancellation_is_cancelled_again_until_it_ends(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tasks, "REDELIVER_AFTER", 0.01, raising=False)
    absorbed = asyncio.Event()
    cancellations = 0

    async def stubborn() -> None:
        nonlocal cancellations
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancellations += 1
            absorbed.set()  # as an SDK's cleanup might: swallowed, and the task goes on waiting
        await asyncio.sleep(3600)

    task = asyncio.get_running_loop().create_task(stubborn())
    await asyncio.sleep(0)
    with anyio.fail_after(30):
        await cancel_and_wait(task)
    assert absorbed.is_set() and cancellations == 1
    assert task.cancelled()


async def test_an_error_raised_on_the_way_out_is_retrieved_not_raised() -> None:
    started = asyncio.Event()

    async def failing_cleanup() -> None:
        try:
            started.set()
            await asyncio.sleep(3600)
        finally:
            raise RuntimeError("cleanup failed")

    task = asyncio.get_running_loop().create_task(failing_cleanup())
    await started.wait()
    with anyio.fail_after(30):
        await cancel_and_wait(task)
    assert task.done() and not task.cancelled()
    assert isinstance(task.exception(), RuntimeError)
