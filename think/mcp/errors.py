"""Errors of the MCP client, and the one-line text of an SDK failure."""

from __future__ import annotations


class MCPServerUnavailable(ConnectionError):
    """The server is not connected (connecting, failed, removed) or dropped during a call."""


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups; `exc` itself if it is not one."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def describe(exc: BaseException) -> str:
    """One line for a failed connection or call: the innermost causes, without tracebacks."""
    from mcp.shared.exceptions import MCPError

    texts: list[str] = []
    for leaf in leaves(exc):
        if isinstance(leaf, MCPError):
            text = f"{leaf.message} (MCP error {leaf.code})"
        else:
            text = f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__
            cause = leaf.__cause__
            if cause is not None and str(cause) and str(cause) not in text:
                text += f" ({cause})"
        if text not in texts:
            texts.append(text)
    return "; ".join(texts)[:500] or type(exc).__name__
