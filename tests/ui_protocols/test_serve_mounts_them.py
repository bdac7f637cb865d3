"""`think serve` mounts AG-UI and A2A by default (both SDKs are installed here): a real
`think serve` subprocess answers an AG-UI run and serves an A2A agent card."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.submissions.server_process import think_serve_process

TARGET = "tests/ui_protocols/agents.py:ProtocolChat"


def test_think_serve_answers_ag_ui_and_a2a_by_default(tmp_path: Path) -> None:
    env = {"THINK_DATA_DIR": str(tmp_path / "data")}
    with think_serve_process([TARGET], env, ready_path="/agents/protocol-chat/probe/get-messages") as server:
        run = {"threadId": "t", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hello"}]}
        with httpx.stream("POST", f"{server.http}/agents/protocol-chat/room/ag-ui", json=run, timeout=20) as reply:
            assert reply.status_code == 200
            events = [json.loads(line[6:]) for line in reply.iter_lines() if line.startswith("data: ")]
        card = httpx.get(f"{server.http}/.well-known/agent-card.json", timeout=10).json()
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_FINISHED"
    assert "".join(e.get("delta", "") for e in events if e["type"] == "TEXT_MESSAGE_CONTENT") == "Echo: hello"
    assert card["name"] == "ProtocolChat"
    assert card["supportedInterfaces"][0]["url"].endswith("/agents/protocol-chat/a2a")
