"""How a server hook admits or refuses a request: the one reading of `on_before_connect`-style results.

A hook returns None (or True) to let the request through, and a `Response`, False, or an
`HTTPException` it raises to refuse it; a hook that raises anything else refuses with 403 (and
is logged). The agent routes (`on_before_connect`) and the agents browser (`on_browse`) both
ask their hooks through `ask()`, so the two can never read a hook's answer differently.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse, Response

log = logging.getLogger("think.server")


async def ask(hook: Callable[..., Any], conn: HTTPConnection, *args: Any, name: str) -> Response | None:
    """None to let `conn` through, or the response that refuses it (`name` names the hook in logs)."""
    try:
        result = hook(conn, *args)
        if inspect.isawaitable(result):
            result = await result
    except HTTPException as exc:
        return PlainTextResponse(exc.detail, status_code=exc.status_code, headers=exc.headers)
    except Exception:
        log.warning("%s raised; refusing the request", name, exc_info=True)
        return PlainTextResponse("Forbidden", status_code=403)
    if isinstance(result, Response):
        return result
    if result is False:
        return PlainTextResponse("Forbidden", status_code=403)
    return None
