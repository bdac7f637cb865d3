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


WRITER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA busy_timeout=5000")
conn.execute("BEGIN IMMEDIATE")
parent = conn.execute("SELECT s.leaf_id FROM think_sessions s WHERE s.id = ''").fetchone()[0]
seq = conn.execute("SELECT seq FROM think_messages WHERE session_id = '' AND id = ?", (parent,)).fetchone()[0]
for n in range(200):
    seq = conn.execute("INSERT INTO think_messages (session_id, id, parent, role, body, created_at) "
                       "VALUES ('', ?, ?, 'user', ?, ?) RETURNING seq",
                       (f"uncommitted-{n}", seq, b'{"id":"x","role":"user","parts":[]}', time.time())).fetchone()[0]
conn.execute("UPDATE think_sessions SET leaf_id = 'uncommitted-199' WHERE id = ''")
print("holding", flush=True)
sys.stdin.read()
"""


def test_a_writer_holding_a_transaction_or_killed_inside_it_does_not_stop_a_listing(
        filled: Filled, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    from think.browse import agents_browser

    data_dir, _ = filled
    db = data_dir / "notes" / "alice.db"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "holding"
        browser = agents_browser(data_dir)
        alice = browser.instance("notes", "alice")  # no wait for the writer's lock, its rows unseen
        assert (alice.messages, alice.title) == (4, "Plan the offsite")
        assert len(browser.transcript("notes", "alice").messages) == 4
        writer.send_signal(signal.SIGKILL)  # killed inside its transaction: nothing of it was committed
        writer.wait(timeout=10)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(timeout=10)
    assert agents_browser(data_dir).instance("notes", "alice").messages == 4
    assert "4 messages" in _alice_line(data_dir)
