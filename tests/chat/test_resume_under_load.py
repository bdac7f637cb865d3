"""Fifty turns stream at once on one server, 200 chunks each, and every client drops its socket
at a random point and reconnects: each ends with exactly the saved reply, with no chunk lost or
repeated on the resumed socket.

The model is instant, except that most turns hold at a random chunk until their client has come
back and had the stream replayed (it says so with an RPC call): those resume mid-stream for sure,
replay then live. The others never hold: their clients come back whenever they do.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import orjson
from websockets.asyncio.client import connect as ws_connect

from tests.chat.live_server import LiveServer, serve_in_thread
from tests.chat.test_tool_results_and_continuations import chat_request, user
from think import Think, callable
from think.messages import Message
from think.models.base import ModelRequest
from think.models.events import Finish, StreamEvent, TextDelta
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.stream.fold import Fold

TURNS = 50
DELTAS = 200
WORDS = [f"t{i:03d} " for i in range(DELTAS)]


class InstantModel:
    """200 text deltas, with no waiting between them (it only lets other tasks run), except at
    `hold_at`, where it waits for its agent's `release` call."""

    model_id = "instant"

    def __init__(self, agent: LoadChat, hold_at: int) -> None:
        self.agent = agent
        self.hold_at = hold_at

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        for index, word in enumerate(WORDS):
            if index == self.hold_at:
                await self.agent.released.wait()
            await anyio.lowlevel.checkpoint()
            yield TextDelta(word)
        yield Finish("stop")


class LoadChat(Think):
    workspace_bash = False

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.released = anyio.Event()

    def get_model(self) -> InstantModel:
        said = self.session.history()[-1].text  # "go <n> hold <k>"
        return InstantModel(self, int(said.split()[-1]))

    def get_skill_script_runner(self) -> None:
        return None

    @callable
    def release(self) -> None:
        self.released.set()


async def recv(ws: Any) -> dict[str, Any]:
    with anyio.fail_after(20):
        return dict(json.loads(await ws.recv()))


async def one_client(live: LiveServer, index: int, hold_at: int, drop_after: int,
                     results: dict[int, dict[str, Any]]) -> None:
    url = live.agent_url("load-chat", f"load-{index}") + f"?_pk=tab-{index}"
    ws = await ws_connect(url, max_queue=None)
    await ws.send(json.dumps({"type": "cf_agent_stream_resume_request", "probeId": "p0"}))
    while (await recv(ws)).get("probeId") != "p0":
        pass
    await ws.send(chat_request(f"r{index}", [user(f"go {index} hold {hold_at}", f"u{index}")]))
    seen: list[int] = []
    while len(seen) < drop_after:
        frame = await recv(ws)
        if frame.get("type") == "cf_agent_use_chat_response" and frame.get("done"):
            break
        if frame.get("type") == "cf_agent_use_chat_response":
            seen.append(frame["seq"])
    assert seen == list(range(len(seen)))
    await ws.close()  # the tab goes away mid-stream; the turn goes on

    ws = await ws_connect(url, max_queue=None)
    await ws.send(json.dumps({"type": "cf_agent_stream_resume_request", "probeId": "p1"}))
    reply = Message(id="resumed", role="assistant")
    fold = Fold(reply)
    seqs: list[tuple[int, bool]] = []
    transcript: list[Any] = []
    resumed = complete = False
    while True:
        frame = await recv(ws)
        kind = frame.get("type")
        if kind == "cf_agent_stream_resuming" and not resumed:
            resumed = True
            await ws.send(json.dumps({"type": "cf_agent_stream_resume_ack", "id": frame["id"]}))
        elif kind == "cf_agent_chat_messages":
            transcript = frame["messages"]
        elif kind == "cf_agent_stream_resume_none" and frame.get("probeId") == "p1":
            break  # the turn had ended: the transcript sent on connect holds the reply
        elif kind == "cf_agent_use_chat_response":
            if frame.get("replayComplete"):
                complete = True
                await ws.send(json.dumps({"type": "rpc", "id": "go", "method": "release", "args": []}))
            elif frame.get("done"):
                break  # (when it ended before our ACK, the final transcript came just before)
            elif frame.get("body"):
                seqs.append((frame["seq"], bool(frame.get("replay"))))
                fold.apply(orjson.loads(frame["body"]))
    await ws.close()
    results[index] = {"seqs": seqs, "text": reply.text, "complete": complete, "transcript": transcript}


async def test_fifty_streams_resume_after_drops_at_random_points(tmp_path: Path) -> None:
    app = create_app([LoadChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    rng = random.Random(4)
    holds = [rng.randrange(5, DELTAS) if i % 5 else -1 for i in range(TURNS)]  # every fifth never holds
    # a client drops before its turn holds (it could not read past that point), or anywhere
    drops = [rng.randrange(0, hold + 3) if hold >= 0 else rng.randrange(0, DELTAS) for hold in holds]
    results: dict[int, dict[str, Any]] = {}
    with serve_in_thread(app) as live:
        with anyio.fail_after(90):
            async with anyio.create_task_group() as tasks:
                for index in range(TURNS):
                    tasks.start_soon(one_client, live, index, holds[index], drops[index], results)
        async with httpx.AsyncClient(timeout=20) as http:
            saved = [(await http.get(live.http_url("load-chat", f"load-{i}", "get-messages"))).json()
                     for i in range(TURNS)]
    expected = "".join(WORDS)
    resumed_mid_stream = 0
    for index in range(TURNS):
        result, messages = results[index], saved[index]
        assert [m["role"] for m in messages] == ["user", "assistant"]
        saved_text = "".join(p.get("text", "") for p in messages[1]["parts"])
        assert saved_text == expected
        assert result["transcript"] == messages  # what the client ends with is exactly what was saved
        if holds[index] >= 0:
            assert result["complete"], f"client {index} did not resume its held turn"
        if result["complete"]:
            resumed_mid_stream += 1
            seqs = [seq for seq, _ in result["seqs"]]
            assert seqs == list(range(len(seqs)))  # replay, then live: no gap, no repeat
            flags = [replay for _, replay in result["seqs"]]
            assert flags == sorted(flags, reverse=True)  # every replayed chunk before the first live one
            assert result["text"] == expected
    assert resumed_mid_stream >= TURNS * 4 // 5
