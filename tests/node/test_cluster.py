"""The real `useAgentChat` (under Node) against three `think serve --database` processes: a tab
on process B follows a turn that runs on process A live; A is SIGKILLed mid-answer; B's tab
reconnects to B, which takes the agent over and finishes the answer, so the tab ends with ONE
assistant message holding the whole answer, never showing a word twice; a tab opened on process C
then loads the same transcript."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from typing import Any

import httpx
import pytest

from tests.cluster.nodes import cluster, owner
from tests.node.conftest import DRIVER, HERE, RUN_TIMEOUT, TabState
from tests.node.test_restart_recovery import WHOLE, _assistant_texts

TARGET = "tests.node.agents:NodeRecovering"
AGENT = "node-recovering"


def test_a_tab_on_another_process_follows_a_turn_through_the_kill_of_its_process(node: str, database: str) -> None:
    with cluster([TARGET], database, {}) as nodes:
        plan = {"host": f"127.0.0.1:{nodes[0].port}", "hosts": [f"127.0.0.1:{n.port}" for n in nodes],
                "agent": "NodeRecovering", "run": secrets.token_hex(3), "only": ["cluster"], "waitMs": 20_000}
        proc = subprocess.Popen([node, str(DRIVER), json.dumps(plan)], cwd=HERE, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "NODE_ENV": "production"})
        assert proc.stdin is not None and proc.stdout is not None
        result: dict[str, Any] | None = None
        killed: list[str | None] = []
        try:
            for line in proc.stdout:
                if not line.startswith("{"):
                    continue
                data = json.loads(line)
                if data.get("control") == "kill-owner":
                    room = f"cluster-{plan['run']}"
                    killed.append(owner(database, f"{AGENT}/{room}"))
                    nodes[0].kill()  # SIGKILL of the process running the turn
                    proc.stdin.write("{}\n")
                    proc.stdin.flush()
                elif "scenarios" in data:
                    result = data
            proc.wait(timeout=RUN_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stderr = proc.stderr.read() if proc.stderr is not None else ""
        if result is None:
            pytest.fail(f"drive.mjs printed no result (exit {proc.returncode}):\n{stderr[-5000:]}", pytrace=False)
        outcome = result["scenarios"]["cluster"]
        if not outcome["ok"]:
            pytest.fail(f"the cluster scenario failed:\n{outcome['error']}\n\n"
                        f"state:\n{json.dumps(outcome.get('state'), indent=1)[-4000:]}", pytrace=False)
        stored = httpx.get(f"{nodes[2].http}/agents/{AGENT}/{outcome['room']}/get-messages", timeout=10).json()
        now = owner(database, f"{AGENT}/{outcome['room']}")
    assert killed == ["n0"] and now in ("n1", "n2")
    live, later, before = (TabState(outcome["result"][k]) for k in ("B", "C", "before_kill"))
    assert [m["role"] for m in live.messages] == ["user", "assistant"]
    assert live.texts()[1].split() == WHOLE.split()
    assert [m["id"] for m in stored] == [m["id"] for m in live.messages] == [m["id"] for m in later.messages]
    assert live.messages[1]["id"] == before.messages[1]["id"]
    assert later.texts() == live.texts()
    for text in _assistant_texts([entry for state in live.raw["shown"] for entry in state]):
        words = text.split()
        assert words == [f"w{k:02d}" for k in range(1, len(words) + 1)], text


