"""Actions with the real npm clients: the approval frames of an approval-gated action (the
descriptor reaches `useAgentChat`'s part as `approval.descriptor`), and a durable-pause action
approved from a second tab by RPC while the first watches the outcome arrive."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.chat.live_server import serve_in_thread
from tests.node.action_agents import RUNS, NodeShop
from tests.node.conftest import NodeRun, Scenario, run_driver
from think.runtime import EmbeddedRuntime
from think.server import create_app


@pytest.fixture(scope="module")
def actions_run(node: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    RUNS.clear()
    app = create_app([NodeShop], runtime=EmbeddedRuntime(tmp_path_factory.mktemp("shop-data"), idle_timeout=60))
    with serve_in_thread(app) as live:
        run: NodeRun = run_driver(node, f"127.0.0.1:{live.port}", only=["actions"], agent=NodeShop.__name__)
        yield run.scenario("actions")


def parts(messages: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [p for m in messages for p in m["parts"] if p["type"] == f"tool-{name}"]


def test_the_approval_request_carries_the_descriptor_into_the_hook(actions_run: Scenario) -> None:
    asked = actions_run.result["asked"]
    assert asked["state"] == "approval-requested"
    descriptor = asked["approval"]["descriptor"]
    assert descriptor | {"requestId": "-"} == {
        "requestId": "-", "toolCallId": "call_refund", "action": "refund", "summary": "Refund an order",
        "input": {"order": "order-7"}, "permissions": ["billing:refund"], "risk": "medium", "kind": "approval-gated"}
    a = actions_run.tab("A")
    [chunk] = [c for f in a.socket.received if (c := f.chunk) is not None and c["type"] == "tool-approval-request"]
    assert chunk["approvalDescriptor"] == descriptor
    [approval] = [f.data for f in a.socket.sent if f.type == "cf_agent_tool_approval"]
    assert approval["toolCallId"] == "call_refund" and approval["approved"] is True
    [done] = parts(a.messages, "refund")
    assert done["state"] == "output-available" and done["output"] == {"refunded": "order-7"}


def test_a_parked_action_is_approved_from_another_tab_once(actions_run: Scenario) -> None:
    result = actions_run.result
    [pending] = result["pending"]
    assert pending["source"] == "action" and pending["descriptor"]["action"] == "deploy"
    assert result["approved"]["status"] == "completed" and result["approved"]["output"] == {"deployed": "v2"}
    assert result["again"]["status"] == "error" and "already settled" in result["again"]["error"]
    assert result["left"] == []
    assert RUNS == ["refund:order-7", "deploy:v2"]
    for label in ("A", "B"):
        tab = actions_run.tab(label)
        [part] = parts(tab.messages, "deploy")
        assert part["output"] == {"deployed": "v2"}, label  # the outcome replaced the paused record
        said = " ".join(p["text"] for m in tab.messages for p in m["parts"] if p["type"] == "text")
        assert "Waiting for approval" not in said and said.endswith("Deployed v2."), (label, said)
        assert tab.error is None
