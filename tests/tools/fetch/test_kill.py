"""SIGKILL a server while its agent's `fetch_url` is in flight: after a restart the durable
submission is recovered and the fetch (a GET: `recovery="rerun"`) runs again and completes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.net.site import Site
from tests.submissions.server_process import eventually, serve_process
from think.client import AgentClient

APP = "tests.tools.fetch.web_app:app"


async def test_a_fetch_killed_mid_flight_is_run_again_after_a_restart(site: Site, tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"THINK_DATA_DIR": str(data), "THINK_TEST_SITE_PORT": str(site.port)}
    ready = "/agents/web-reader/probe/get-messages"
    with serve_process(APP, env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/web-reader/tides", call_timeout=10) as client:
            submission_id = await client.call("submit", "When is high water?")
            await eventually(lambda: site.paths() == ["/once"])  # the first GET hangs on the site
            server.kill()
    db = data / "web-reader" / "tides.db"

    def stored() -> tuple[str, list[dict[str, object]]]:
        conn = sqlite3.connect(db)
        try:
            [(status,)] = conn.execute("SELECT status FROM think_submissions WHERE id = ?", (submission_id,))
            messages = [json.loads(b) for (b,) in conn.execute("SELECT body FROM think_messages")]
        finally:
            conn.close()
        return status, messages

    assert stored()[0] == "running"
    with serve_process(APP, env, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/web-reader/tides", call_timeout=10):
            await eventually(lambda: stored()[0] == "completed")
    assert site.paths() == ["/once", "/once"]
    parts = [p for m in stored()[1] for p in m["parts"] if p["type"] == "tool-fetch_url"]  # type: ignore[attr-defined]
    [part] = parts
    assert part["state"] == "output-available" and part["output"]["ok"] is True
    assert "06:12" in part["output"]["body"]
    text = "".join(str(p.get("text", "")) for m in stored()[1] if m["role"] == "assistant" for p in m["parts"])  # type: ignore[attr-defined]
    assert text == "High water is at 06:12 (fetched: True)."
