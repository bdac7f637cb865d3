"""Steering with the real npm client: a tab sends a second message while the first answer
streams (its tool is running); with `message_concurrency = "steer"` the message joins the
running turn at its step boundary. The stock `useAgentChat` (with the AI SDK's `useChat`) shows
it as an ordinary user message, and a second tab sees the same transcript."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.chat.live_server import serve_in_thread
from tests.node.agents import NodeSteer
from tests.node.conftest import NodeRun, run_driver
from think.runtime import EmbeddedRuntime
from think.server import create_app

EXPECTED = [("user", "plan a trip"), ("assistant", ""), ("user", "and book a hotel"),
            ("assistant", "Noted: and book a hotel (after 1 tool results).")]


@pytest.fixture(scope="module")
def steer_run(node: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeRun, list[dict[str, object]]]]:
    data = tmp_path_factory.mktemp("steer-data")
    app = create_app([NodeSteer], runtime=EmbeddedRuntime(data, idle_timeout=60))
    with serve_in_thread(app) as live:
        run = run_driver(node, f"127.0.0.1:{live.port}", only=["steer"], agent=NodeSteer.__name__)
        room = run.scenarios["steer"]["room"]
        stored = httpx.get(f"{live.base_url.rstrip('/')}/agents/node-steer/{room}/get-messages", timeout=10).json()
        yield run, stored


def texts(messages: list[dict[str, object]]) -> list[tuple[str, str]]:
    return [(str(m["role"]), "".join(str(p["text"]) for p in m["parts"] if p["type"] == "text"))  # type: ignore[attr-defined]
            for m in messages]


def test_a_message_sent_while_the_answer_streams_steers_the_running_turn(
        steer_run: tuple[NodeRun, list[dict[str, object]]]) -> None:
    run, stored = steer_run
    scenario = run.scenario("steer")
    assert texts(stored) == EXPECTED  # the first answer stopped at its boundary; no "Plan finished."
    a, watcher = scenario.tab("A"), scenario.tab("watcher")
    for tab in (a, watcher):
        assert texts(tab.messages) == EXPECTED
        assert [m["id"] for m in tab.messages] == [m["id"] for m in stored]
        assert tab.error is None and tab.status == "ready"
    first, second = a.requests()
    assert a.turn(first["id"])[-1].data["done"] and a.turn(second["id"])[-1].data["outcome"] == "completed"
    # the first turn's stream ended at the boundary; the steered answer streamed under the second id
    assert not any(f.chunk and f.chunk.get("type") == "text-delta" for f in a.turn(first["id"]))
    assert "".join(f.chunk["delta"] for f in a.turn(second["id"])
                   if f.chunk and f.chunk.get("type") == "text-delta") == EXPECTED[-1][1]
