"""The agents the protocol conformance tests talk to, and a server for them in its own process.

`ProtocolChat` answers by the first word of the user's message:

* `slow N` — N words, 30 ms apart (`w01 w02 …`); a recovery continues from the last word said;
* `gated` — "Gated: held", then waits until `POST …/gate` opens this instance's gate, then " open"
  (`GET …/queue` says how many turns wait behind it);
* `notify` — calls `notify_team`, which needs approval;
* `locate` — calls `get_location`, a tool without `execute` (the browser answers it);
* `browser` — calls `getBrowserInfo`, a tool only the browser registers (`clientTools`);
* `fail` — "Let me try" then a model error;
* anything else — `Echo: <message>`.

After a tool result it answers `Done: <output>` (or `Denied.` for a refused call). The subclasses
differ only in `message_concurrency`.

    python -m tests.ui.protocol_agents PORT DATA_DIR      # serves them (the restart test kills it)
"""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any

import anyio
import orjson
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from tests.shared_tools import notify_team
from think import Think
from think.models.base import ModelRequest, ToolMessage
from think.models.events import Finish, StreamEvent, TextDelta
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.server.websocket import WebSocketProtocol
from think.testing.models import Item, Reply, ScriptedModel, call, delay, error, text
from think.tools.tool import client_tool

HARNESS_DIST = Path(__file__).parent / "harness" / "dist"
WORD_DELAY = 0.03
_GATES: dict[str, anyio.Event] = {}



get_location = client_tool("get_location", description="Where the user is (the browser knows).")



def gate(name: str) -> anyio.Event:
    if name not in _GATES:
        _GATES[name] = anyio.Event()
    return _GATES[name]


def slow(count: int, continuing: str | None = None) -> list[str | Item]:
    """`w01 … wN`, a word every `WORD_DELAY`; continuing a cut answer, the words after its last."""
    items: list[str | Item] = []
    for i in range(len((continuing or "").split()) + 1, count + 1):
        items += [text(f"w{i:02d} "), delay(WORD_DELAY)]
    return items


class GatedModel(ScriptedModel):
    """A ScriptedModel whose `gated` reply waits for the agent's gate between two texts."""

    def __init__(self, name: str) -> None:
        super().__init__(self.reply)
        self.name = name

    def reply(self, request: ModelRequest) -> Reply:
        last = request.messages[-1] if request.messages else None
        if isinstance(last, ToolMessage):
            result = last.results[0]
            if result.is_error:
                return "Denied."
            output = result.output if isinstance(result.output, str) else orjson.dumps(result.output).decode()
            return f"Done: {output}"
        said = request.last_user_text
        word = said.split(" ", 1)[0].lower()
        if word == "slow":
            return slow(int(said.split()[1]), request.continuing)
        if word == "notify":
            return call("notify_team", message="The deploy finished")
        if word == "locate":
            return call("get_location")
        if word == "browser":
            return call("getBrowserInfo")
        if word == "fail":
            return [text("Let me try"), error("the scripted model failed")]
        return f"Echo: {said}"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if request.last_user_text.lower().startswith("gated") and not isinstance(request.messages[-1], ToolMessage):
            yield TextDelta("Gated: held")
            await gate(self.name).wait()
            yield TextDelta(" open")
            yield Finish("stop")
            return
        async for event in super().stream(request):
            yield event


class ProtocolChat(Think):
    workspace_bash = False

    def get_model(self) -> GatedModel:
        return GatedModel(self.db.path)  # one gate per instance and data directory

    def get_tools(self) -> list[Any]:
        return [notify_team, get_location]

    def get_skill_script_runner(self) -> None:
        return None

    async def on_request(self, request: Any) -> Response:
        if request.method == "POST" and request.url.path.endswith("/gate"):
            gate(self.db.path).set()
            return PlainTextResponse("open")
        if request.url.path.endswith("/queue"):  # turns waiting for the one that runs
            return JSONResponse({"waiting": self.turn_queue.waiting})
        return PlainTextResponse("Not implemented", status_code=404)


class QueueChat(ProtocolChat):
    message_concurrency = "queue"


class LatestChat(ProtocolChat):
    message_concurrency = "latest"


class MergeChat(ProtocolChat):
    message_concurrency = "merge"


class DropChat(ProtocolChat):
    message_concurrency = "drop"


class DebounceChat(ProtocolChat):
    message_concurrency = MappingProxyType({"strategy": "debounce", "debounce": 0.6})


AGENTS: list[type[Think]] = [ProtocolChat, QueueChat, LatestChat, MergeChat, DropChat, DebounceChat]


def protocol_app(data_dir: Path) -> ASGIApp:
    """The agents at /agents/…, the harness page at /harness/."""
    inner = create_app(AGENTS, runtime=EmbeddedRuntime(data_dir, idle_timeout=60))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with inner.router.lifespan_context(inner):
            yield

    return Starlette(routes=[Mount("/harness", app=StaticFiles(directory=HARNESS_DIST, html=True)),
                             Mount("/", app=inner)], lifespan=lifespan)


def main(port: int, data_dir: str) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    config = uvicorn.Config(protocol_app(Path(data_dir)), lifespan="on", log_level="warning", ws=WebSocketProtocol)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
