"""`@callable`: methods that clients may call over the WebSocket `rpc` frames."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

F = TypeVar("F", bound=Callable[..., Any])
CALLABLE_ATTR = "__think_callable__"


@overload
def callable(fn: F, /) -> F: ...


@overload
def callable(*, streaming: bool = False, description: str | None = None, mcp: bool = False) -> Callable[[F], F]: ...


def callable(
    fn: Any = None, /, *, streaming: bool = False, description: str | None = None, mcp: bool = False
) -> Any:
    """Mark an agent method as callable by clients (`{"type":"rpc","method":...}`).

    A streaming callable receives a `StreamingResponse` as its first argument and sends chunks
    through it before returning. `mcp=True` also offers it as a tool `<agent>_<method>` of the
    app's MCP endpoint (`create_app(..., mcp=True)`, see `think.mcp.serve`).
    """

    def mark(f: F) -> F:
        setattr(f, CALLABLE_ATTR, {"streaming": streaming, "description": description, "mcp": mcp})
        return f

    return mark(fn) if fn is not None else mark


def callable_info(method: Any) -> dict[str, Any] | None:
    return getattr(method, CALLABLE_ATTR, None)
