"""A server SIGKILLed in the middle of an AG-UI run: the client's run ends in a network error, the
turn is durable, and after a restart on the same data the server's crash recovery finishes the
answer by itself (nobody reconnects); the next AG-UI run gets it whole, as one message under the
id the client saw streaming before the kill."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx

from tests.submissions.server_process import eventually, serve_process
from tests.ui_protocols.agui_fixtures import Drive, agui_node_fixture  # noqa: F401 - a fixture

APP = "tests.ui_protocols.restart_app:app"
AGENT = "node-recovering"
WHOLE = [f"w{k:02d}" for k in range(1, 41)]


def _words(text: Any) -> list[str]:
    return str(text or "").split()


def _run(node: str, scenario: str, url: str, *, kill_after: int = 0, kill: Any = None,
         prompt: str | None = None) -> dict[str, Any]:
    run = Drive(node, scenario, url, prompt=prompt)
    try:
        if kill is not None:
            run.wait_for("TEXT_MESSAGE_CONTENT", kill_after)
            kill()
        return run.finish()
    finally:
        run.close()


async def test_a_killed_server_finishes_the_run_s_answer_after_a_restart(agui_node: str, tmp_path: Path) -> None:
    env = {"THINK_DATA_DIR": str(tmp_path / "data")}
    ready = f"/agents/{AGENT}/probe/get-messages"
    path = f"/agents/{AGENT}/room"
    with serve_process(APP, env, ready_path=ready) as first:
        before = await anyio.to_thread.run_sync(
            lambda: _run(agui_node, "ask", first.http + path + "/ag-ui", kill_after=12, kill=first.kill,
                         prompt="count 40"))  # SIGKILL mid-answer: no shutdown, nothing flushed
        port = first.port
    cut = before["reply"]
    assert cut["error"] is not None and "RUN_FINISHED" not in cut["types"]  # a network error ended the run
    streamed = next(m for m in cut["messages"] if m["role"] == "assistant")
    assert 12 <= len(_words(streamed["content"])) < 40

    with serve_process(APP, env, ready_path=ready, port=port) as again:
        def whole() -> bool:
            stored = httpx.get(again.http + path + "/get-messages", timeout=10).json()
            return len(stored) == 2 and _words("".join(p.get("text", "") for p in stored[1]["parts"])) == WHOLE

        await eventually(whole, within=60)  # recovered by the restarted server itself
        after = await anyio.to_thread.run_sync(lambda: _run(agui_node, "follow", again.http + path + "/ag-ui"))
    reply = after["reply"]
    assert reply["finished"]["outcome"] == {"type": "success"}
    assert [(m["role"], _words(m.get("content"))) for m in reply["messages"]] == [("user", ["count", "40"]),
                                                                                ("assistant", WHOLE)]
    assert reply["messages"][1]["id"] == streamed["id"]  # the message the client saw before the kill
