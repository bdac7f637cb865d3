"""A code-mode agent: the model writes Python that calls its tools and files in one step.

    think serve examples/code_mode.py:Analyst

`execute` runs the program in the sandbox host (pydantic-monty): `tools.*` are the tools below,
`state.*` the agent's workspace. `refund` needs a person's approval: a program that calls it
pauses durably, and `approve_execution(execution_id)` (a callable, also from the web UI's RPC)
continues it, even after a restart.

Run it offline with `python examples/code_mode.py`: a scripted model writes the program.
"""

from __future__ import annotations

import asyncio
from typing import Any

from think import Think, open_agent, tool
from think.testing.models import ScriptedModel, call
from think.tools.execute import create_execute_tool

ORDERS = {"A-1": {"customer": "ada", "total": 120.0}, "A-2": {"customer": "bob", "total": 35.5},
          "A-3": {"customer": "ada", "total": 12.25}}


@tool
def get_order(order_id: str) -> dict[str, Any]:
    """One order: customer and total.

    Args:
        order_id: Such as "A-1".
    """
    return {"order_id": order_id, **ORDERS[order_id]}


@tool
def list_orders() -> list[str]:
    """The ids of all orders."""
    return sorted(ORDERS)


@tool(needs_approval=True)
def refund(order_id: str, amount: float) -> str:
    """Refund part of an order (a person approves each refund)."""
    return f"refunded {amount:.2f} on {order_id}"


PROGRAM = """
totals = {}
for order_id in tools.list_orders():
    order = tools.get_order(order_id=order_id)
    totals[order["customer"]] = totals.get(order["customer"], 0) + order["total"]
state.write_file("/reports/totals.json", json.dumps(totals, indent=2))
totals
"""


class Analyst(Think):
    """Answers questions about orders by writing small programs."""

    workspace_bash = False
    welcome = "I answer questions about the orders by writing small programs; refunds need your approval."
    suggestions = ("How much did each customer spend?", "Refund 10 on order A-2.")

    def get_tools(self) -> list[Any]:
        return [get_order, list_orders, refund, create_execute_tool(self, timeout=10)]


class OfflineAnalyst(Analyst):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel([call("execute", code="import json\n" + PROGRAM), "Ada spent 132.25, Bob 35.50."])


async def main() -> None:
    async with open_agent(OfflineAnalyst, "demo", data_dir=".think-example") as agent:
        await agent.save_messages(["How much did each customer spend?"])
        for message in agent.messages:
            for part in message.parts:
                print(message.role, getattr(part, "text", None) or getattr(part, "output", None))
        print(await agent.workspace.read_file("/reports/totals.json"))


if __name__ == "__main__":
    asyncio.run(main())
