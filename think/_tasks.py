"""Background tasks the framework starts outside any turn (MCP connections, submission drains)."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel `task` and wait until it has ended, even if the caller is being cancelled too (the
    task's own cleanup must finish before its resources are reused)."""
    if task is None or task.done():
        return
    task.cancel()
    with anyio.CancelScope(shield=True):
        await asyncio.gather(task, return_exceptions=True)
