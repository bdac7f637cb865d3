"""`cf_agent_mcp_servers` as the real `useAgent` (agents 0.32.0) receives it in `onMcpUpdate`.

A page connects, asks the agent (a `@callable`) to add the demo MCP server, and records every
update: the empty state on connect, the server `connecting`, then `ready` with its tools, prompts
and resources (each with its `serverId`), then nothing once it is removed. The field names are
those of the package's `MCPServersState` type.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path
from typing import Any

from tests.chat.live_server import serve_in_thread
from tests.mcp.conftest import DemoServer, demo_server  # noqa: F401  (the fixture)
from think import Think, callable
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.testing import ScriptedModel

HERE = Path(__file__).parent


class McpPage(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(["unused"])

    @callable()
    async def add_demo(self, url: str) -> dict[str, Any]:
        return await self.add_mcp_server("demo", url, timeout=0)

    @callable()
    async def remove_server(self, server_id: str) -> bool:
        return await self.remove_mcp_server(server_id)


def test_on_mcp_update_gets_every_state_of_the_server(node: str, tmp_path: Path, demo_server: DemoServer) -> None:  # noqa: F811
    app = create_app([McpPage], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        proc = subprocess.run([node, str(HERE / "mcp_update.mjs"), f"127.0.0.1:{live.port}", "mcp-page",
                               secrets.token_hex(4), demo_server.url], cwd=HERE, capture_output=True, text=True,
                              timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["ok"], result
    updates = result["updates"]
    server_id = result["added"]["id"]
    assert updates[0] == {"prompts": [], "resources": [], "servers": {}, "tools": []}
    states = [u["servers"][server_id]["state"] for u in updates if server_id in u["servers"]]
    assert states[0] == "connecting" and "discovering" in states and "ready" in states
    ready = next(u for u in updates if u["servers"].get(server_id, {}).get("state") == "ready")
    server = ready["servers"][server_id]
    assert set(server) == {"name", "server_url", "auth_url", "state", "error", "instructions", "capabilities"}
    assert server["name"] == "demo" and server["server_url"] == demo_server.url and server["error"] is None
    assert server["instructions"] == "A demo server for think's tests."
    assert server["capabilities"]["tools"] == {"listChanged": True}
    echo = next(t for t in ready["tools"] if t["name"] == "echo")
    assert echo["serverId"] == server_id and echo["inputSchema"]["required"] == ["text"]
    assert [p["name"] for p in ready["prompts"]] == ["greet"] and ready["prompts"][0]["serverId"] == server_id
    assert [r["uri"] for r in ready["resources"]] == ["demo://readme"]
    assert updates[-1] == {"prompts": [], "resources": [], "servers": {}, "tools": []}
