"""Browsing a data directory while a real `think serve` runs a turn in it, and after it was killed.

The server is a subprocess holding the data directory's lock; the listings come from its own
`/_think/agents` (read on separate read-only connections while the agent is live and busy) and
from `think agents` / `think show` in other processes (which never take the lock). SQLite's WAL
lets them read the last committed state during the turn and after a SIGKILL in the middle of it.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx

from tests.cli.conftest import run_think
from tests.submissions.server_process import think_serve_process
from think.client import AgentClient

Filled = tuple[Path, dict[str, list[str]]]
TARGET = "tests.browse.agents:Notes"


def _alice_line(data_dir: Path) -> str:
    done = run_think("agents", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    return next(line for line in done.stdout.splitlines() if line.strip().startswith("alice "))


async def test_listing_works_mid_turn_and_after_the_server_is_killed(filled: Filled) -> None:
    data_dir, _ = filled
    env = {"THINK_DATA_DIR": str(data_dir.resolve())}
    with think_serve_process([TARGET], env, ready_path="/_think/agents") as server:
        async with AgentClient.connect(f"{server.ws}/agents/notes/alice", call_timeout=10) as client:
            turn = await client.send_chat("slow one, please")
            await client.wait_until(lambda _: "part one" in turn.text)  # the model hangs from here on
            async with httpx.AsyncClient(base_url=server.http, timeout=10) as http:
                listing = (await http.get("/_think/agents/notes")).json()
                transcript = (await http.get("/_think/agents/notes/alice")).json()
            alice = next(i for i in listing["instances"] if i["name"] == "alice")
            assert alice["messages"] == 5  # the new question is stored; the answer is still streaming
            assert transcript["messages"][-1]["message"]["parts"][0]["text"] == "slow one, please"
            # Another process reads too, while the server holds the data directory mid-turn.
            assert "5 messages" in await anyio.to_thread.run_sync(_alice_line, data_dir)
            server.kill()
    assert "5 messages" in _alice_line(data_dir)
    shown = run_think("show", "notes/alice", "--data-dir", str(data_dir))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.rstrip().endswith("slow one, please")
