"""Waiting for an agent's MCP state: on its change notifications, with a deadline (no sleeps)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from think import Think


async def until(agent: Think, condition: Callable[[], Any], *, timeout: float = 30.0,  # noqa: ASYNC109
                what: str = "") -> Any:
    """Wait until `condition()` is truthy, re-checked after every MCP change; returns its value."""
    changed = anyio.Event()

    def poke() -> None:
        changed.set()

    unsubscribe = agent.mcp.subscribe(poke)
    try:
        with anyio.fail_after(timeout):
            while not (value := condition()):
                await changed.wait()
                changed = anyio.Event()
            return value
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what or condition}: {agent.mcp_servers()}") from None
    finally:
        unsubscribe()


def server_state(agent: Think, server_id: str) -> str:
    return str(next(s["state"] for s in agent.mcp_servers() if s["id"] == server_id))
