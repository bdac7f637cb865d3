"""Deeply nested input, then the real browser hooks (`useAgent` + `useAgentChat` under Node).

Raw frames put values at every depth from 240 to 270 and around the limit into one room: the
state, a data part and the metadata of a user message, a client tool's output (`deep_nesting` in
drive.mjs). Each is refused with an error naming the limit or kept. Then a page opens the room:
it loads the transcript (HTTP `get-messages`, then the socket), gets the state, and chats on (its
request resends every message it holds). The server is then stopped and started again on the
same data, and a new page does the same (`deep_reopen`).
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.chat.live_server import serve_in_thread
from tests.node.agents import NodeChat
from tests.node.conftest import NodeRun, TabState, run_driver
from tests.server.deep_agents import depth_of_nested
from think.protocol.limits import IN_PART, MAX_DEPTH
from think.runtime import EmbeddedRuntime
from think.server import create_app

ALLOWED = {"tool-output": MAX_DEPTH - IN_PART, "state": MAX_DEPTH, "metadata": MAX_DEPTH - 1,
           "data-part": MAX_DEPTH - IN_PART}


@pytest.fixture(scope="module")
def runs(node: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[NodeRun, NodeRun]:
    data = tmp_path_factory.mktemp("deep-data")
    run = secrets.token_hex(3)
    with serve_in_thread(create_app([NodeChat], runtime=EmbeddedRuntime(data, idle_timeout=60))) as live:
        first = run_driver(node, f"127.0.0.1:{live.port}", only=["deep_nesting"], run=run, limit=MAX_DEPTH,
                           inPart=IN_PART)
    # stopped, and started again on the same data
    with serve_in_thread(create_app([NodeChat], runtime=EmbeddedRuntime(data, idle_timeout=60))) as live:
        second = run_driver(node, f"127.0.0.1:{live.port}", only=["deep_reopen"], run=run)
    return first, second


def kept(outcomes: list[dict[str, Any]], kind: str) -> list[int]:
    return [o["depth"] for o in outcomes if o["kind"] == kind and not o["errors"]]


def test_each_deep_value_is_refused_naming_the_limit_or_kept(runs: tuple[NodeRun, NodeRun]) -> None:
    result = runs[0].scenario("deep_nesting").result
    assert result["located"]["done"] is True
    outcomes = result["outcomes"]
    assert {o["kind"] for o in outcomes} == set(ALLOWED)
    for kind, allowed in ALLOWED.items():
        depths = {o["depth"] for o in outcomes if o["kind"] == kind}
        assert set(range(240, 271)) | set(range(allowed - 2, allowed + 3)) <= depths
    for outcome in outcomes:
        too_deep = outcome["depth"] > ALLOWED[outcome["kind"]]
        depth_errors = [e for e in outcome["errors"] if "nested too deeply" in e]
        assert bool(depth_errors) == too_deep, outcome
        for error in depth_errors:
            assert f"limit of {MAX_DEPTH}" in error or f"limit is {MAX_DEPTH}" in error, error


def check_page(tab: TabState, outcomes: list[dict[str, Any]], *, said: str) -> None:
    """What a page shows of the room: every kept value, at its depth; and its own turn."""
    assert tab.error is None and tab.status == "ready"
    assert not [line for line in tab.console if line["level"] == "error"], tab.console
    (get_messages,) = [h for h in tab.http if h["url"].endswith("/get-messages")]
    assert get_messages["status"] == 200
    messages = tab.messages
    state = tab.raw["agentState"]
    assert state is not None and depth_of_nested(state["value"]) == max(kept(outcomes, "state"))
    (call,) = [p for m in messages for p in m["parts"] if p.get("toolCallId") == "loc1"]
    assert call["state"] == "output-available"
    assert depth_of_nested(call["output"]) == min(kept(outcomes, "tool-output"))  # the first one answers it
    metadata = {m["id"]: m.get("metadata") for m in messages}
    for depth in kept(outcomes, "metadata"):
        value = metadata[f"user-metadata-{depth}"]
        assert isinstance(value, dict) and value["channel"] == "web"
        assert depth_of_nested(value["k"]) + 1 == depth
    data = {m["id"]: [p for p in m["parts"] if p["type"] == "data-deep"] for m in messages}
    for depth in kept(outcomes, "data-part"):
        (part,) = data[f"user-data-part-{depth}"]
        assert depth_of_nested(part["data"]) == depth
    refused = {f"user-{o['kind']}-{o['depth']}" for o in outcomes if o["errors"]}
    assert not refused & set(metadata)
    assert tab.texts()[-2:] == [said, f"Echo: {said}"]
    assert tab.turn_ends[-1]["outcome"] == "completed"


def test_a_page_opened_after_the_deep_values_reads_them_and_chats_on(runs: tuple[NodeRun, NodeRun]) -> None:
    result = runs[0].scenario("deep_nesting").result
    check_page(TabState(result["reader"]), result["outcomes"], said="next after deep")


def test_after_a_restart_a_new_page_reads_them_and_chats_on(runs: tuple[NodeRun, NodeRun]) -> None:
    outcomes = runs[0].scenario("deep_nesting").result["outcomes"]
    result = runs[1].scenario("deep_reopen").result
    check_page(TabState(result["reader"]), outcomes, said="next after restart")
