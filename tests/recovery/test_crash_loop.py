"""SIGKILL a real server mid-turn again and again; after each restart the turn finishes exactly once.

Each round: a real client sends a question, the server (a subprocess) is killed at a random point
of the slow turn (while it streams, while its tool runs; every fifth round the server kills
itself inside a write of the resumable chunk buffer, see `crash_app`), the database
is read as the dead process left it, the server restarts, the client reconnects, and the round
checks that the user message and every chunk persisted before the kill are in the final reply,
that the answer is there exactly once, that no tool call ran twice, and that the client ends with
the transcript the server stores. Prints the counts.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from collections import Counter
from pathlib import Path

import anyio

from tests.recovery.crash_agents import answer
from tests.submissions.server_process import serve_process
from think.client import AgentClient

APP = "tests.recovery.crash_app:app"
ROUNDS = int(os.environ.get("THINK_CRASH_ROUNDS", "20"))


def _dead_state(db: Path, request_id: str, tools: Path, skip: int) -> dict[str, object]:
    """What the killed process left: the stream's persisted text, the fiber, the phase."""
    conn = sqlite3.connect(db)
    try:
        text = ""
        for (body,) in conn.execute("SELECT body FROM think_stream_chunks WHERE request_id = ? ORDER BY first_seq",
                                    (request_id,)):
            for line in body.split("\n"):
                chunk = json.loads(line)
                if chunk.get("type") == "text-delta":
                    text += chunk["delta"]
        fiber = conn.execute("SELECT 1 FROM think_chat_fibers").fetchone() is not None
        users = [json.loads(b) for (b,) in conn.execute("SELECT body FROM think_messages")]
    finally:
        conn.close()
    lines = (tools.read_text().splitlines() if tools.exists() else [])[skip:]  # this round's
    started = Counter(line.split()[1] for line in lines if line.startswith("start"))
    ended = {line.split()[1] for line in lines if line.startswith("end")}
    in_tool = any(call not in ended for call in started)
    phase = "tool" if in_tool else "answer" if "Answer to" in text else "before-answer"
    return {"text": text, "fiber": fiber, "phase": phase, "messages": users}


def _turn_text(messages: list[dict[str, object]], question: str) -> str | None:
    """The assistant text after the user message `question` (None if that message is missing)."""
    roles = [(m["role"], "".join(p.get("text", "") for p in m["parts"])) for m in messages]  # type: ignore[union-attr]
    at = [i for i, (role, text) in enumerate(roles) if role == "user" and text == question]
    if len(at) != 1:
        return None
    out = ""
    for role, text in roles[at[0] + 1:]:
        if role == "user":
            break
        out += text
    return out


async def test_sigkill_mid_turn_loses_nothing_and_finishes_each_turn_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    tools = tmp_path / "tools.txt"
    kill_file = tmp_path / "kill-in-flush"
    env = {"THINK_DATA_DIR": str(data), "THINK_TEST_TOOLS": str(tools), "THINK_TEST_KILL_FILE": str(kill_file)}
    ready = "/agents/crashy/probe/get-messages"
    rng = random.Random(int(os.environ.get("THINK_CRASH_SEED", "7")))
    counts = Counter[str]()
    failures: list[str] = []
    began = time.monotonic()
    server_cm = serve_process(APP, env, ready_path=ready)
    server = server_cm.__enter__()
    try:
        for n in range(ROUNDS):
            question = f"q{n}"
            skip = len(tools.read_text().splitlines()) if tools.exists() else 0
            stratum = n % 10  # kill points spread over the whole turn, jittered
            url = f"{server.ws}/agents/crashy/chat"
            in_flush = n % 5 == 2
            if in_flush:
                kill_file.write_text(str(rng.randint(1, 5)))  # it dies in its k-th flush (a turn has 5-7)
            async with AgentClient.connect(url, call_timeout=10) as client:
                turn = await client.send_chat(question)
                if in_flush:
                    with anyio.move_on_after(15):
                        while server.process.poll() is None:  # noqa: ASYNC110 - another process
                            await anyio.sleep(0.01)
                    if server.process.poll() is None:
                        counts["flush kills missed"] += 1
                        server.kill()
                else:
                    await anyio.sleep(0.05 + 0.08 * stratum + rng.uniform(0.0, 0.08))
                    server.kill()
            counts["kills"] += 1
            db = next(data.glob("crashy/chat*.db"))
            dead = _dead_state(db, turn.request_id, tools, skip)
            counts["killed inside a buffer flush" if in_flush else f"killed during {dead['phase']}"] += 1
            server_cm.__exit__(None, None, None)
            server_cm = serve_process(APP, env, ready_path=ready)
            server = server_cm.__enter__()
            async with AgentClient.connect(f"{server.ws}/agents/crashy/chat", call_timeout=10) as client:
                full = answer(question)
                with anyio.fail_after(30):
                    while True:
                        stored = [m.to_json() for m in await client.get_messages()]
                        text = _turn_text(stored, question)
                        if text is not None and full in text and not any(not t.done for t in client.turns.values()):
                            break
                        await anyio.sleep(0.05)
                await anyio.sleep(0.2)  # let the last broadcast reach the client
                stored = [m.to_json() for m in await client.get_messages()]
                seen = [m.to_json() for m in client.messages]
            text = _turn_text(stored, question) or ""
            counts["turns recovered" if dead["fiber"] else "killed after the turn ended"] += 1
            if not text.startswith(str(dead["text"])) and str(dead["text"]) not in text:
                counts["messages lost"] += 1
                failures.append(f"{question}: persisted {dead['text']!r} missing from {text!r}")
            if text.count("END.") != 1 or text.count("Answer to") != 1:
                counts["turns not exactly once"] += 1
                failures.append(f"{question}: {text!r}")
            if [(m["id"], m["parts"]) for m in seen] != [(m["id"], m["parts"]) for m in stored]:
                counts["client transcript differs"] += 1
                failures.append(f"{question}: client {seen!r} != server {stored!r}")
    finally:
        server_cm.__exit__(None, None, None)
    lines = tools.read_text().splitlines() if tools.exists() else []
    starts = Counter(line.split()[1] for line in lines if line.startswith("start"))
    counts["tool executions"] = sum(starts.values())
    counts["duplicate tool executions"] = sum(c - 1 for c in starts.values() if c > 1)
    figures = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    print(f"\ncrash loop ({time.monotonic() - began:.0f} s): {figures}")
    assert counts["kills"] >= 20 or ROUNDS < 20
    assert counts["flush kills missed"] == 0
    assert counts["messages lost"] == 0 and counts["duplicate tool executions"] == 0, failures
    assert counts["turns not exactly once"] == 0 and counts["client transcript differs"] == 0, failures
