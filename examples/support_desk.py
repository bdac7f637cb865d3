"""A support desk: it reads tickets freely, but a person approves every refund and escalation.

    think serve examples/support_desk.py:SupportDesk        # chat; Approve / Deny in the web UI
    python examples/support_desk.py                         # offline: a scripted model plays it

The tickets live in the agent's workspace (`/tickets/<id>.json`, seeded on the first start), so
they are in the agent's SQLite file with the conversation, and the web UI's files panel shows
them change. `refund` and `escalate` are `@tool(needs_approval=True)`: when the model calls one,
the turn stops with the call `approval-requested` and nothing has run yet. The answer comes from
the web UI's buttons (a `cf_agent_tool_approval` frame) or from Python:

    await agent.approve_tool_call(tool_call_id, True)                      # runs it, then the model goes on
    await agent.approve_tool_call(tool_call_id, False, "Not for shipping delays")   # the model is told

The pending approval is part of the stored transcript: a restart in between loses nothing, and
the answer can come from another process later.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from think import Think, ToolContext, ToolFailed, open_agent, tool
from think.messages import ToolPart
from think.models.base import ModelRequest, ToolMessage
from think.testing import ScriptedModel, call
from think.testing.models import Reply

SEED_TICKETS: dict[str, dict[str, Any]] = {
    "T-1001": {"customer": "ada@example.com", "subject": "Charged twice for order A-17", "amount": 42.0,
               "status": "open", "notes": []},
    "T-1002": {"customer": "bob@example.com", "subject": "Parcel two weeks late", "amount": 18.5,
               "status": "open", "notes": []},
}

SYSTEM_PROMPT = """You are the support desk of a small web shop. Look a ticket up before you act on it.
You may refund at most the ticket's amount, and you escalate only what the desk cannot solve.
Refunds and escalations are approved by a person: if one is denied, say so plainly, note why on
the ticket and suggest what the desk can do instead. Be brief and friendly."""


def _path(ticket_id: str) -> str:
    if not re.fullmatch(r"T-\d{1,8}", ticket_id):
        raise ToolFailed(f"{ticket_id!r} is not a ticket id (they look like T-1001)")
    return f"/tickets/{ticket_id}.json"


async def load_ticket(ctx: ToolContext, ticket_id: str) -> dict[str, Any]:
    raw = await ctx.agent.workspace.read_file(_path(ticket_id))
    if raw is None:
        raise ToolFailed(f"There is no ticket {ticket_id}.")
    ticket: dict[str, Any] = json.loads(raw)
    return ticket


async def save_ticket(ctx: ToolContext, ticket_id: str, ticket: dict[str, Any]) -> None:
    await ctx.agent.workspace.write_file(_path(ticket_id), json.dumps(ticket, indent=2))


@tool
async def get_ticket(ctx: ToolContext, ticket_id: str) -> dict[str, Any]:
    """A ticket: customer, subject, amount paid, status and notes.

    Args:
        ticket_id: Such as "T-1001".
    """
    return {"ticket_id": ticket_id, **await load_ticket(ctx, ticket_id)}


@tool
async def add_note(ctx: ToolContext, ticket_id: str, note: str) -> str:
    """Add an internal note to a ticket.

    Args:
        ticket_id: Such as "T-1001".
        note: What happened, for the next person who reads the ticket.
    """
    ticket = await load_ticket(ctx, ticket_id)
    ticket["notes"].append(note)
    await save_ticket(ctx, ticket_id, ticket)
    return f"Noted on {ticket_id}."


@tool(needs_approval=True)
async def refund(ctx: ToolContext, ticket_id: str, amount: float, reason: str) -> str:
    """Refund the customer of a ticket (a person approves every refund first).

    Args:
        ticket_id: Such as "T-1001".
        amount: How much to refund, at most what the ticket says was paid.
        reason: Why, in a sentence the customer may read.
    """
    ticket = await load_ticket(ctx, ticket_id)
    if amount <= 0 or amount > ticket["amount"]:
        raise ToolFailed(f"A refund on {ticket_id} must be between 0 and {ticket['amount']:.2f}.")
    ticket.update(status="refunded", refunded=amount)
    ticket["notes"].append(f"Refunded {amount:.2f}: {reason}")
    await save_ticket(ctx, ticket_id, ticket)
    return f"Refunded {amount:.2f} to {ticket['customer']} on {ticket_id}."


@tool(needs_approval=True)
async def escalate(ctx: ToolContext, ticket_id: str, team: str, reason: str) -> str:
    """Hand a ticket to another team (a person approves every escalation first).

    Args:
        ticket_id: Such as "T-1001".
        team: "billing", "logistics" or "engineering".
        reason: What the team needs to know.
    """
    ticket = await load_ticket(ctx, ticket_id)
    ticket.update(status=f"escalated to {team}")
    ticket["notes"].append(f"Escalated to {team}: {reason}")
    await save_ticket(ctx, ticket_id, ticket)
    return f"{ticket_id} is now with {team}."


class SupportDesk(Think):
    """Answers support tickets; refunds and escalations wait for a person's approval."""

    workspace_bash = False
    welcome = "Support desk. Tickets T-1001 and T-1002 are open; refunds and escalations need your approval."
    suggestions = ("Ticket T-1001 was charged twice: refund the duplicate.",
                   "Escalate T-1002 to logistics, the parcel is two weeks late.",
                   "What does ticket T-1002 say?")

    def get_system_prompt(self) -> str:
        return SYSTEM_PROMPT

    def get_tools(self) -> list[Any]:
        return [get_ticket, add_note, refund, escalate]

    async def on_start(self) -> None:
        if not await self.workspace.exists("/tickets"):  # the first start: a few tickets to work on
            for ticket_id, ticket in SEED_TICKETS.items():
                await self.workspace.write_file(f"/tickets/{ticket_id}.json", json.dumps(ticket, indent=2))


def desk_model(request: ModelRequest) -> Reply:
    """A rule-based stand-in for a real model: it looks the ticket up, then refunds or escalates,
    and answers from the tools' results (including a denial)."""
    last = request.messages[-1] if request.messages else None
    if isinstance(last, ToolMessage):
        result = last.results[-1]
        if result.name == "get_ticket" and not result.is_error:
            ticket = result.output
            return call("refund", ticket_id=ticket["ticket_id"], amount=ticket["amount"],
                        reason="a duplicate charge")
        if result.is_error and result.name in ("refund", "escalate"):  # a denial reads as an error result
            found = re.search(r"T-\d+", request.last_user_text)
            return call("add_note", ticket_id=found.group() if found else "", note=f"{result.name}: {result.output}")
        if result.name == "add_note":
            return "That was not approved, so the ticket stays with the desk; I noted why on it."
        return str(result.output)
    prompt = request.last_user_text
    found = re.search(r"T-\d+", prompt)
    if found is None:
        return "Which ticket is it? Ticket ids look like T-1001."
    if "escalate" in prompt.lower():
        return call("escalate", ticket_id=found.group(), team="logistics", reason=prompt)
    return call("get_ticket", ticket_id=found.group())


class OfflineSupportDesk(SupportDesk):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(desk_model)


def pending_call(agent: Think) -> ToolPart:
    """The call of the newest reply that waits for an approval."""
    [part] = [p for p in agent.messages[-1].parts if isinstance(p, ToolPart) and p.state == "approval-requested"]
    return part


async def main() -> None:
    async with open_agent(OfflineSupportDesk, "demo", data_dir=".think-example") as agent:
        await agent.clear_messages()
        await agent.save_messages("Ticket T-1001 was charged twice: refund the duplicate.")
        waiting = pending_call(agent)
        print("waiting for approval:", waiting.name, waiting.input)
        await agent.approve_tool_call(waiting.tool_call_id, True)
        print("assistant:", agent.messages[-1].text)

        await agent.save_messages("Escalate T-1002 to logistics, the parcel is two weeks late.")
        waiting = pending_call(agent)
        print("waiting for approval:", waiting.name, waiting.input)
        await agent.approve_tool_call(waiting.tool_call_id, False, "Late parcels stay with the desk")
        print("assistant:", agent.messages[-1].text)
        for ticket_id in SEED_TICKETS:
            print(await agent.workspace.read_file(f"/tickets/{ticket_id}.json"))


if __name__ == "__main__":
    asyncio.run(main())
