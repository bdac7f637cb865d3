"""`NodeShop`, the agent of the npm-client actions scenario: `refund <order>` calls the
approval-gated action `refund`; `deploy <ref>` calls the durable-pause action `deploy`. Each run of
an action is counted in `RUNS` (the server runs in the test's process)."""

from __future__ import annotations

from typing import Any

from think import Think, action
from think.models.base import ModelRequest, ToolMessage
from think.testing import ScriptedModel, call
from think.testing.models import Reply

RUNS: list[str] = []


@action(approval=True, approval_summary="Refund an order", approval_risk="medium", permissions=["billing:refund"])
def refund(order: str) -> dict[str, str]:
    """Refund a customer order."""
    RUNS.append(f"refund:{order}")
    return {"refunded": order}


@action(kind="durable-pause", approval_summary="Deploy to production", approval_risk="high")
def deploy(ref: str) -> dict[str, str]:
    """Deploy a release."""
    RUNS.append(f"deploy:{ref}")
    return {"deployed": ref}


def shop_script(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        result = last.results[0]
        if result.name == "refund":
            return f"Refunded {result.output['refunded']}."
        if result.output.get("status") == "paused":
            return f"Waiting for approval to deploy {result.output['descriptor']['input']['ref']}."
        return f"Deployed {result.output['deployed']}."
    said = request.last_user_text
    if said.startswith("refund"):
        return call("refund", id="call_refund", order=said.split()[1])
    if said.startswith("deploy"):
        return call("deploy", id="call_deploy", ref=said.split()[1])
    return f"Echo: {said}"


class NodeShop(Think):
    """Served at `/agents/node-shop/<name>`."""

    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(shop_script, chunk_delay=0.002)

    def get_actions(self) -> list[Any]:
        return [refund, deploy]
