"""docs/deploying.md's `app.py` works as written: served by uvicorn, it lets a user reach only
their own conversations, over HTTP and over the WebSocket."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

from tests.submissions.server_process import ServerProcess
from think.client import AgentClient

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "deploying.md"
PROVIDER_SETTINGS = ("THINK_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GEMINI_API_KEY",
                     "GOOGLE_API_KEY", "OLLAMA_HOST")


def app_module() -> str:
    [code] = re.findall(r'^```python title="app.py"\n(.*?)^```$', PAGE.read_text(encoding="utf-8"),
                        re.MULTILINE | re.DOTALL)
    return str(code)


def serve_app(folder: Path, env: dict[str, str]) -> ServerProcess:
    """`uvicorn app:app` in `folder`, on a socket bound here (it may not be ready yet)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = int(sock.getsockname()[1])
    process = subprocess.Popen([sys.executable, "-m", "uvicorn", "app:app", "--fd", str(sock.fileno()),
                                "--log-level", "warning"], cwd=folder, pass_fds=(sock.fileno(),), env=env)
    sock.close()
    return ServerProcess(process, port)


async def test_the_pages_app_refuses_other_users_and_missing_tokens(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(app_module(), encoding="utf-8")
    # No model configured: the agent answers with the offline demo model.
    env = {**{k: v for k, v in os.environ.items() if k not in PROVIDER_SETTINGS}, "PYTHONPATH": str(ROOT),
           "ALICE_TOKEN": "s3cret", "THINK_DATA_DIR": str(tmp_path / "data"), "OLLAMA_HOST": "http://127.0.0.1:9"}
    server = serve_app(tmp_path, env)
    try:
        await server.ready("/_think/health")
        base = f"{server.http}/agents/assistant"
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.get(f"{base}/alice/get-messages")).status_code == 401
            assert (await http.get(f"{base}/alice/get-messages?token=wrong")).status_code == 401
            assert (await http.get(f"{base}/bob/get-messages?token=s3cret")).status_code == 401
            allowed = await http.get(f"{base}/alice-notes/get-messages", headers={"cookie": "token=s3cret"})
            assert (allowed.status_code, allowed.json()) == (200, [])
        with pytest.raises(InvalidStatus) as refused:
            async with ws_connect(f"{server.ws}/agents/assistant/alice"):
                pass
        assert refused.value.response.status_code == 401
        async with AgentClient.connect(f"{server.ws}/agents/assistant/alice?token=s3cret", wait_timeout=10,
                                       turn_timeout=30) as client:
            turn = await client.send_chat("what is 2+3?")
            await turn
            assert turn.outcome == "completed"
    finally:
        server.stop()
