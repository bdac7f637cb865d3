"""A server SIGKILLed while an A2A task's answer streams: the subscriber's stream breaks, the
task is a durable submission, and the restarted server (on the same data, nobody reconnecting)
continues the cut reply; `GetTask` then reads COMPLETED with the whole answer as one message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
from a2a.types.a2a_pb2 import GetTaskRequest, SubscribeToTaskRequest

from tests.submissions.server_process import serve_process
from tests.ui_protocols.a2a_client import a2a_client, as_dict, collect, text

APP = "tests.ui_protocols.restart_app:app"
AGENT = "node-recovering"
WHOLE = [f"w{k:02d}" for k in range(1, 41)]


async def test_a_task_cut_by_a_kill_completes_after_a_restart(tmp_path: Path) -> None:
    env = {"THINK_DATA_DIR": str(tmp_path / "data")}
    ready = f"/agents/{AGENT}/probe/get-messages"
    with serve_process(APP, env, ready_path=ready) as first:
        async with a2a_client(first.http, AGENT, streaming=False, polling=True) as starter, \
                a2a_client(first.http, AGENT) as watcher:
            (started,) = await collect(starter, text("count 40"), return_immediately=True)
            task_id, context_id = started["task"]["id"], started["task"]["contextId"]
            chunks = 0
            try:
                async for event in watcher.subscribe(SubscribeToTaskRequest(id=task_id)):
                    chunks += "artifactUpdate" in as_dict(event)
                    if chunks == 12:
                        first.kill()  # SIGKILL mid-answer
            except Exception as exc:  # the stream breaks with the server
                broken: Exception | None = exc
            else:
                broken = None
        port = first.port
    assert broken is not None and chunks >= 12

    with serve_process(APP, env, ready_path=ready, port=port) as again:
        async with a2a_client(again.http, AGENT) as client:
            with anyio.fail_after(60):
                while True:  # the server recovers the task by itself; a subscription follows it to its end
                    events = [as_dict(e) async for e in client.subscribe(SubscribeToTaskRequest(id=task_id))]
                    if _state(events[-1]) == "TASK_STATE_COMPLETED":
                        break
                    assert _state(events[-1]) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"), events[-1]
            done = as_dict(await client.get_task(GetTaskRequest(id=task_id)))
        async with httpx.AsyncClient(timeout=10) as http:
            stored = (await http.get(f"{again.http}/agents/{AGENT}/{context_id}/get-messages")).json()
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"][0]["text"].split() == WHOLE
    assert [m["role"] for m in stored] == ["user", "assistant"]  # one answer, continued where it was cut
    assert "".join(p.get("text", "") for p in stored[1]["parts"]).split() == WHOLE


def _state(event: dict[str, Any]) -> str:
    holder = event.get("task") or event.get("statusUpdate") or {}
    return str(holder.get("status", {}).get("state"))
