"""The agents browser over HTTP: read-only JSON routes under `/_think/agents`.

    GET /_think/agents                       {"agents": [{agent, instances, last_activity}]}
    GET /_think/agents/<agent>               {"agent", "instances": [{name, title, last_activity, messages, …}]}
    GET /_think/agents/<agent>/<name>        {"agent", "name", "active", "messages": [{id, role, created_at,
                                               message, branches, branch}]}   (?branch=<message id>)

What it trusts: nothing a client says beyond the path. `create_app(browse=True)` mounts these
routes (they are absent otherwise: production apps expose no listing unless asked); a request
then passes `authorize()`, the one place that decides who may read:

* a token (`browse_token`, default `THINK_BROWSE_TOKEN`) must come as `Authorization: Bearer …`;
* the app's `on_browse(request, agent, name)` hook (agent and name None where the path has none)
  is asked like `on_before_connect` (`think.server.gate`): None lets it through, a Response,
  False or an HTTPException refuses it.

Both apply when both are set; with neither, every client that reaches the server may read. The
reads run in a worker thread on read-only connections (`think.browse.reader`): a listing never
wakes an agent or waits for one.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from think.browse.reader import BrowseError, DataDirReader
from think.server.gate import ask

BrowseHook = Callable[[HTTPConnection, "str | None", "str | None"],
                      "Response | bool | Awaitable[Response | bool | None] | None"]
"""`on_browse(request, agent, name)`: None lets a browser request through; a Response, False or an
`HTTPException` refuses it."""
PATH = "/_think/agents"
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


async def authorize(request: Request, agent: str | None, name: str | None, *, token: str | None,
                    hook: BrowseHook | None) -> Response | None:
    """None if `request` may read; else the response that refuses it."""
    if token:
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
            return PlainTextResponse("The agents browser needs its token (Authorization: Bearer …)",
                                     status_code=401, headers={"WWW-Authenticate": "Bearer", **_HEADERS})
    if hook is not None:
        return await ask(hook, request, agent, name, name="on_browse")
    return None


def browse_routes(data_dir: str | Path, *, token: str | None = None, on_browse: BrowseHook | None = None
                  ) -> list[BaseRoute]:
    """The routes of the agents browser over `data_dir` (see the module docstring)."""
    reader = DataDirReader(data_dir)

    async def read(request: Request, agent: str | None, name: str | None,
                   fn: Callable[[], dict[str, Any]]) -> Response:
        if (denial := await authorize(request, agent, name, token=token, hook=on_browse)) is not None:
            return denial
        try:
            body = await anyio.to_thread.run_sync(fn)
        except BrowseError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404, headers=_HEADERS)
        return JSONResponse(body, headers=_HEADERS)

    def agents() -> dict[str, Any]:
        if not reader.data_dir.is_dir():  # nothing has run yet
            return {"agents": []}
        return {"agents": [a.to_json() for a in reader.agents()]}

    async def list_agents(request: Request) -> Response:
        return await read(request, None, None, agents)

    async def list_instances(request: Request) -> Response:
        agent = request.path_params["agent"]
        return await read(request, agent, None, lambda: {
            "agent": agent, "instances": [i.to_json() for i in reader.instances(agent)]})

    async def transcript(request: Request) -> Response:
        agent, name = request.path_params["agent"], request.path_params["name"]
        branch = request.query_params.get("branch") or None
        return await read(request, agent, name, lambda: reader.transcript(agent, name, branch=branch).to_json())

    return [Route(PATH, list_agents, methods=["GET"]),
            Route(PATH + "/{agent}", list_instances, methods=["GET"]),
            Route(PATH + "/{agent}/{name:path}", transcript, methods=["GET"])]
