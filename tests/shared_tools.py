"""Tools the end-to-end tests share: a plain server tool and one that asks for approval."""

from __future__ import annotations

from think import tool

NOTIFIED: list[str] = []
"""Every message `notify_team` sent, in this process (tests compare counts or clear it first)."""


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool(needs_approval=True)
def notify_team(message: str) -> str:
    """Send a message to the team (recorded, not delivered).

    Args:
        message: What to tell them.
    """
    NOTIFIED.append(message)
    return f"Sent: {message}"
