"""`think serve` (the AI SDK protocol is on by default) SIGKILLed while a reply streams over
`POST …/chat`, then started again on the same data: the turn recovers like any other. A page that
resumes (`GET …/chat/<id>/stream`) right after the restart gets the words that were saved,
closed by an `abort` chunk; the server's recovery then finishes the reply in the same message,
and the next resume gets that message whole, every word once."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.submissions.server_process import think_serve_process

TARGET = "tests.node.agents:NodeRecovering"
AGENT = "node-recovering"
WHOLE = [f"w{k:02d}" for k in range(1, 41)]
DEADLINE = 30.0


def _events(text: str) -> list[Any]:
    blocks = [b.removeprefix("data: ") for b in text.split("\n\n") if b]
    return [b if b == "[DONE]" else json.loads(b) for b in blocks]


def _words(events: list[Any]) -> list[str]:
    return "".join(e["delta"] for e in events if isinstance(e, dict) and e["type"] == "text-delta").split()


def test_a_killed_server_recovers_the_reply_and_a_resume_gets_it_whole(tmp_path: Path) -> None:
    env = {"THINK_DATA_DIR": str(tmp_path / "data")}
    ready = f"/agents/{AGENT}/probe/chat"  # the ai-sdk transcript endpoint: on by default
    chat = f"/agents/{AGENT}/room/chat"
    body = {"id": "c", "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "count 40"}]}]}
    with think_serve_process([TARGET], env, ready_path=ready) as first:
        received = ""
        with httpx.stream("POST", first.http + chat, json=body, timeout=10) as response:
            assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
            try:
                for text in response.iter_text():
                    received += text
                    if received.count('"text-delta"') >= 12:
                        first.kill()  # SIGKILL: no shutdown, the chunk buffer's last batch is lost
            except httpx.HTTPError:
                pass  # the connection died with the server
        port = first.port
    before = [e for e in _events(received) if e != "[DONE]"]
    assert "[DONE]" not in received and 12 <= len(_words(before)) < 40
    message_id = before[0]["messageId"]

    with think_serve_process([TARGET], env, ready_path=ready, port=port) as second:
        resumes: list[list[Any]] = []
        deadline = time.monotonic() + DEADLINE
        while not resumes or _words(resumes[-1]) != WHOLE:
            assert time.monotonic() < deadline, f"no resume got the whole reply: {resumes}"
            response = httpx.get(f"{second.http}{chat}/c/stream", timeout=30)
            if response.status_code == 200:
                resumes.append(_events(response.text))
            else:
                assert response.status_code == 204
                time.sleep(0.05)  # the recovery is about to start; ask again
        transcript = httpx.get(second.http + chat, timeout=10).json()

    for events in resumes:
        assert events[0] == {"type": "start", "messageId": message_id} and events[-1] == "[DONE]"
        words = _words(events)
        assert words == WHOLE[:len(words)]  # in order, never a word twice
    first_resume = resumes[0]
    if first_resume[-2] == {"type": "abort", "reason": "The server stopped while this reply streamed"}:
        assert len(_words(first_resume)) <= len(_words(before))  # what was saved before the kill
    assert [e["type"] for e in resumes[-1] if isinstance(e, dict)][-1] == "finish"
    (user, reply) = transcript
    assert (user["id"], reply["id"]) == ("u1", message_id)
    assert "".join(p.get("text", "") for p in reply["parts"]).split() == WHOLE
