"""Background tasks the framework starts outside any turn (MCP connections, submission drains)."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio

REDELIVER_AFTER = 1.0
"""Seconds `cancel_and_wait` gives a cancelled task before it cancels it again."""


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel `task` and wait until it has ended, even if the caller is being cancelled too (the
    task's own cleanup must finish before its resources are reused).

    Library code the task runs (an SDK's task groups, a `finally` that awaits) can absorb one
    cancellation and carry on; the wait would then never end. So the cancellation is delivered
    again every `REDELIVER_AFTER` seconds until the task has ended."""
    if task is None or task.done():
        return
    task.cancel()
    with anyio.CancelScope(shield=True):
        while not task.done():
            await asyncio.wait((task,), timeout=REDELIVER_AFTER)
            if not task.done():
                task.cancel()
    if not task.cancelled():
        task.exception()  # retrieved: an error on the way out is not reported as never retrieved
