"""A server SIGKILLed mid-answer and restarted on the same data, with the page left open: the
real `useAgentChat` (under Node, see conftest.py) ends with ONE assistant message holding the
whole answer, never shows a word twice on the way, and a reload gets the same message.

The server is a subprocess (`restart_app.py`) killed by the test when the tab shows `w13` of a
40-word answer, then started again on the same port and data directory; the tab reconnects by
itself. On the wire the reconnected tab gets the saved words replayed, closed by a `done` frame
with outcome `aborted` and the user message's id, then `cf_agent_chat_recovering`, the
continuation (`continuation: true`, a new request id) and the end of the recovery.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.node.conftest import DRIVER, HERE, RUN_TIMEOUT, Frame, Socket, TabState
from tests.submissions.server_process import ServerProcess, serve_process

APP = "tests.node.restart_app:app"
AGENT = "node-recovering"
WHOLE = " ".join(f"w{k:02d}" for k in range(1, 41))


def _drive(node: str, server: list[ServerProcess], restart: Any) -> dict[str, Any]:
    """Run the `restart` scenario; on its control line, kill and restart the server."""
    plan = {"host": f"127.0.0.1:{server[0].port}", "agent": "NodeRecovering", "run": secrets.token_hex(3),
            "only": ["restart"], "waitMs": 20_000}
    proc = subprocess.Popen([node, str(DRIVER), json.dumps(plan)], cwd=HERE, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NODE_ENV": "production"})
    assert proc.stdin is not None and proc.stdout is not None
    result: dict[str, Any] | None = None
    try:
        for line in proc.stdout:
            if not line.startswith("{"):
                continue
            data = json.loads(line)
            if data.get("control") == "kill-and-restart":
                proc.stdin.write(json.dumps(restart()) + "\n")
                proc.stdin.flush()
            elif "scenarios" in data:
                result = data
        proc.wait(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read() if proc.stderr is not None else ""
    if result is None:
        pytest.fail(f"drive.mjs printed no result (exit {proc.returncode}):\n{stderr[-5000:]}", pytrace=False)
    outcome = result["scenarios"]["restart"]
    if not outcome["ok"]:
        state = json.dumps(outcome.get("state"), indent=1)[-6000:]
        pytest.fail(f"the restart scenario failed:\n{outcome['error']}\n\nthe tab's state:\n{state}\n\n"
                    f"driver stderr (tail):\n{stderr[-3000:]}", pytrace=False)
    return dict(outcome)


def _assistant_texts(shown: list[list[str]]) -> list[str]:
    return [text for role, _, text in shown if role == "assistant"]


def test_a_killed_and_restarted_server_gives_the_open_page_one_whole_answer(node: str, tmp_path: Path) -> None:
    env = {"THINK_DATA_DIR": str(tmp_path / "data")}
    ready = f"/agents/{AGENT}/probe/get-messages"
    held: list[Any] = []
    first = serve_process(APP, env, ready_path=ready)
    server = [first.__enter__()]
    held.append(first)

    def restart() -> dict[str, Any]:
        server[0].kill()  # SIGKILL: whatever the chunk buffer had not written is lost
        again = serve_process(APP, env, ready_path=ready, port=server[0].port)
        server.append(again.__enter__())
        held.append(again)
        return {"pid": server[-1].process.pid}

    try:
        outcome = _drive(node, server, restart)
        result, room = outcome["result"], outcome["room"]
        stored = httpx.get(f"{server[-1].http}/agents/{AGENT}/{room}/get-messages", timeout=10).json()
    finally:
        for cm in reversed(held):
            cm.__exit__(None, None, None)

    live, reloaded, before = TabState(result["A"]), TabState(result["reloaded"]), TabState(result["before_kill"])
    # The page, and a reload, end with one assistant message: the whole answer, nothing streaming.
    assert [m["role"] for m in live.messages] == ["user", "assistant"]
    assert live.texts()[1].split() == WHOLE.split()
    assert [m["id"] for m in stored] == [m["id"] for m in live.messages] == [m["id"] for m in reloaded.messages]
    assert reloaded.texts() == live.texts()
    answer = stored[1]
    assert "".join(p.get("text", "") for p in answer["parts"]).split() == WHOLE.split()
    assert not [p for m in stored for p in m["parts"] if p.get("state") == "streaming"], answer["parts"]
    assert answer["id"] == before.messages[1]["id"]  # the message the page showed before the kill
    # At no render did the page show a word twice (or out of order).
    for text in _assistant_texts([entry for state in live.raw["shown"] for entry in state]):
        words = text.split()
        assert words == [f"w{k:02d}" for k in range(1, len(words) + 1)], text

    # The wire: the reconnected socket got the saved words replayed, closed with `aborted` and
    # the user message's id, then the recovery: a continuation under a new id into that message.
    assert len(live.sockets) == 2
    socket: Socket = live.sockets[1]
    (request,) = [{**f.data, "body": json.loads(f.data["init"]["body"])} for f in live.sockets[0].sent
                  if f.type == "cf_agent_use_chat_request"]
    user_id = request["body"]["messages"][-1]["id"]
    frames = socket.received
    done = [i for i, f in enumerate(frames) if f.type == "cf_agent_use_chat_response" and f.data["id"] == request["id"]
            and f.data.get("done")]
    assert len(done) == 1
    closing = frames[done[0]]
    assert closing.raw == ('{"body":"","done":true,"id":"' + request["id"] + '","type":"cf_agent_use_chat_response",'
                           '"replay":true,"outcome":"aborted","messageIds":["' + user_id + '"]}')
    replayed = [f for f in frames[:done[0]] if f.type == "cf_agent_use_chat_response" and f.data.get("replay")]
    assert replayed and replayed[0].chunk == {"type": "start", "messageId": answer["id"]}
    after: list[Frame] = frames[done[0] + 1:]
    recovering = [f.data for f in after if f.type == "cf_agent_chat_recovering"]
    assert [r["recovering"] for r in recovering] == [True, False]
    continuation = [f for f in after if f.type == "cf_agent_use_chat_response"]
    ids = {f.data["id"] for f in continuation}
    assert len(ids) == 1 and request["id"] not in ids
    assert all(f.data.get("continuation") is True for f in continuation)
    assert continuation[0].chunk == {"type": "start"}  # no messageId: it extends the message shown
    assert continuation[-1].data["done"] is True and continuation[-1].data["outcome"] == "completed"
    at = {f.raw: i for i, f in enumerate(after)}
    start = next(i for i, f in enumerate(after) if f.type == "cf_agent_chat_recovering")
    assert start < at[continuation[0].raw]
