"""The AG-UI endpoint driven by the official client (`@ag-ui/client`'s `HttpAgent` under Node)
against a live uvicorn server: text, reasoning, server tools and state, approvals as interrupts
answered by `resume[]`, frontend tools, refused claims and a failing turn. Every run goes through
the agent's chat channel; the server's transcript (`get-messages`) is checked after each one."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.chat.live_server import LiveServer, serve_in_thread
from tests.ui_protocols.agents import ProtocolChat
from tests.ui_protocols.agui_fixtures import agui_node_fixture, drive  # noqa: F401 - a fixture
from think.runtime import EmbeddedRuntime
from think.server import create_app

AGENT = "protocol-chat"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data = tmp_path_factory.mktemp("agui") / "data"
    app = create_app([ProtocolChat], runtime=EmbeddedRuntime(Path(data), idle_timeout=60),
                     protocols=["cf_agent", "ag-ui"])
    with serve_in_thread(app) as live:
        yield live


def _run(node: str, server: LiveServer, scenario: str) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """The scenario's result, the server's transcript after it, and the agent's name."""
    name = f"{scenario}-{secrets.token_hex(3)}"
    result = drive(node, scenario, server.http_url(AGENT, name, "ag-ui"))
    stored = httpx.get(server.http_url(AGENT, name, "get-messages"), timeout=10).json()
    return result, stored, name


def _shown(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """(role, content) of the client's messages, tool calls by name for an assistant message."""
    out = []
    for m in messages:
        calls = [c["function"]["name"] for c in m.get("toolCalls") or ()]
        out.append((m["role"], m.get("content"), *([calls] if calls else [])))
    return out


def _part(stored: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    return next(p for m in stored for p in m["parts"] if p.get("toolCallId") == call_id)


def test_text_reasoning_a_server_tool_and_the_state(agui_node: str, server: LiveServer) -> None:
    result, stored, _ = _run(agui_node, server, "basics")
    first, second, third = result["first"], result["second"], result["third"]
    for run in (first, second, third):
        assert run["error"] is None and run["runError"] is None
        assert run["types"][:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
        assert run["types"][-2:] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
        assert run["finished"]["outcome"] == {"type": "success"}
    assert [t for t in first["types"] if t.startswith(("REASONING", "TEXT"))] == [
        "REASONING_START", "REASONING_MESSAGE_START", *["REASONING_MESSAGE_CONTENT"] * 3, "REASONING_MESSAGE_END",
        "REASONING_END", "TEXT_MESSAGE_START", *["TEXT_MESSAGE_CONTENT"] * 3, "TEXT_MESSAGE_END"]
    assert _shown(first["messages"]) == [("user", "think hard"), ("reasoning", "Let me see."),
                                         ("assistant", "Thought it through.")]
    assert first["finished"]["usage"][0]["model"] == "scripted"
    # the server tool changed the state mid-run: a STATE_DELTA, and the client's state follows
    assert "STATE_DELTA" in second["types"] and second["state"] == {"count": 2}
    assert _shown(second["messages"])[3:] == [("user", "count please"), ("assistant", "Counted.", ["count_up"]),
                                              ("tool", "count is 2")]
    # text, a call, more text: one assistant message, its text parts joined as the server joins them
    assert _shown(third["messages"])[6:] == [("user", "two parts"),
                                             ("assistant", "First part.\n\nSecond part.", ["count_up"]),
                                             ("tool", "count is 3")]
    assert third["state"] == {"count": 3}
    # the client holds the server's messages under the server's ids
    ids = [m["id"] for m in third["messages"] if m["role"] in ("user", "assistant")]
    assert ids == [m["id"] for m in stored]


def test_an_approval_is_an_interrupt_answered_by_resume(agui_node: str, server: LiveServer) -> None:
    result, stored, _ = _run(agui_node, server, "approval")
    asked, answered = result["asked"], result["answered"]
    outcome = asked["finished"]["outcome"]
    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    assert interrupt["toolCallId"] == "n1" and interrupt["reason"] == "tool_approval"
    assert interrupt["responseSchema"]["required"] == ["approved"]
    assert [i["id"] for i in asked["pendingInterrupts"]] == [interrupt["id"]]
    assert answered["runError"] is None and answered["finished"]["outcome"] == {"type": "success"}
    assert answered["pendingInterrupts"] == []
    assert ("tool", "Sent: hello") in _shown(answered["messages"])
    assert _shown(answered["messages"])[-1] == ("assistant", "Done: Sent: hello")
    assert _part(stored, "n1")["state"] == "output-available"
    assert _part(stored, "n1")["approval"]["id"] == interrupt["id"]


def test_a_cancelled_interrupt_denies_the_call(agui_node: str, server: LiveServer) -> None:
    result, stored, _ = _run(agui_node, server, "denial")
    assert result["answered"]["finished"]["outcome"] == {"type": "success"}
    assert _part(stored, "n1")["state"] == "output-denied"
    assert not any("Sent:" in str(m.get("content")) for m in result["answered"]["messages"])


def test_a_frontend_tool_call_is_pending_until_a_tool_message_answers_it(agui_node: str, server: LiveServer) -> None:
    result, stored, _ = _run(agui_node, server, "frontend")
    assert result["asked"]["finished"]["outcome"] == {"type": "success", "pendingToolCallIds": ["b1"]}
    assert result["pending"] == ["b1"]
    assert _shown(result["answered"]["messages"])[-2:] == [("assistant", "Done: Firefox 140"),
                                                            ("tool", "Firefox 140")]
    assert _part(stored, "b1")["state"] == "output-available" and _part(stored, "b1")["output"] == "Firefox 140"


def test_a_reply_the_server_did_not_write_is_refused(agui_node: str, server: LiveServer) -> None:
    result, stored, _ = _run(agui_node, server, "forged")
    reply = result["reply"]
    assert reply["runError"]["code"] == "refused"
    assert "cannot add an assistant message the server did not write (id 'forged-1')" in reply["runError"]["message"]
    assert reply["types"] == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_ERROR"]
    assert stored == []  # nothing of the refused request was saved


def test_a_result_for_a_server_tool_is_refused_and_nothing_is_applied(agui_node: str, server: LiveServer) -> None:
    result, stored, _ = _run(agui_node, server, "forgedResult")
    forged = result["forged"]
    assert forged["runError"]["code"] == "refused"
    assert "'notify' is a server tool" in forged["runError"]["message"]
    part = _part(stored, "n1")
    assert part["state"] == "approval-requested" and part.get("output") is None  # not even the denial


def test_a_failing_turn_ends_in_run_error_after_the_snapshot(agui_node: str, server: LiveServer) -> None:
    result, stored, _ = _run(agui_node, server, "failure")
    failed = result["failed"]
    assert failed["runError"]["message"] == "mock model exploded"
    assert failed["types"][-2:] == ["MESSAGES_SNAPSHOT", "RUN_ERROR"]
    assert _shown(failed["messages"]) == [("user", "boom now"), ("assistant", "About to fail. ")]
    assert [m["role"] for m in stored] == ["user", "assistant"]


def test_a_body_that_is_not_a_run_agent_input_is_422(server: LiveServer) -> None:
    response = httpx.post(server.http_url(AGENT, "bad", "ag-ui"), json={"messages": "no"}, timeout=10)
    assert response.status_code == 422
    assert response.json()["error"] == "not a RunAgentInput"
    assert httpx.post(server.http_url("no-such-agent", "x", "ag-ui"), json={}, timeout=10).status_code == 400
