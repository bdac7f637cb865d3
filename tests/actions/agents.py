"""Agents for the action tests. Side effects are counted in a file (`THINK_ACTION_EFFECTS`), so a
count survives the SIGKILL of the process that made it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any, ClassVar

from think import ActionContext, Think, action
from think.testing.models import ScriptedModel


def effect(line: str) -> None:
    with Path(os.environ["THINK_ACTION_EFFECTS"]).open("a") as f:
        f.write(line + "\n")


def effects() -> list[str]:
    path = Path(os.environ["THINK_ACTION_EFFECTS"])
    return path.read_text().split() if path.exists() else []


def die_if_armed(where: str = "during") -> None:
    """SIGKILL this process once (while `<effects>.armed` exists), at the point `THINK_CRASH` names."""
    armed = Path(os.environ["THINK_ACTION_EFFECTS"] + ".armed")
    if os.environ.get("THINK_CRASH", "during") == where and armed.exists():
        armed.unlink()
        os.kill(os.getpid(), signal.SIGKILL)


@action(idempotency_key=lambda input, ctx: f"invoice:{input['invoice_id']}", permissions=["billing:charge"])
async def charge(ctx: ActionContext, invoice_id: str, cents: int) -> dict[str, Any]:
    """Charge an invoice.

    Args:
        invoice_id: The invoice.
        cents: How much.
    """
    effect(f"charge:{invoice_id}:{cents}")
    ctx.attach_reply({"type": "card", "title": f"charged {invoice_id}"})
    die_if_armed()  # a kill after the side effect, before the ledger hears of it
    return {"charged": cents, "invoice": invoice_id}


@action
def note(text: str) -> str:
    """Write a note somewhere (no idempotency key: the tool call id is the key)."""
    effect(f"note:{text}")
    die_if_armed()
    return "noted"


@action
def explode(ctx: ActionContext, why: str) -> str:
    """Fail after attaching a card."""
    effect(f"explode:{why}")
    ctx.attach_reply({"type": "card", "title": "never"})
    raise RuntimeError(why)


def _delete(input: dict[str, Any], ctx: ActionContext) -> dict[str, Any]:
    effect(f"delete:{input['user']}")
    return {"deleted": input["user"]}


delete_account = action(
    name="delete_account", description="Permanently delete a user account.",
    input_schema={"type": "object", "properties": {"user": {"type": "string"}}, "required": ["user"]},
    execute=_delete,
    approval=True, approval_summary="Delete an account", approval_risk="high", permissions=["admin"])


@action(kind="durable-pause", approval_summary="Send the email draft", approval_risk="medium",
        permissions=["mail:send"])
async def send_email(ctx: ActionContext, to: str, subject: str) -> dict[str, Any]:
    """Send an email."""
    effect(f"email:{to}")
    ctx.attach_reply({"type": "email_draft", "to": [to], "subject": subject})
    die_if_armed()
    return {"sent": True, "to": to}


class Shop(Think):
    model: ClassVar[ScriptedModel] = ScriptedModel([])
    granted: ClassVar[list[str] | None] = None
    """The permissions `authorize_turn` grants (None: every one)."""
    clock_offset: ClassVar[float] = 0.0
    """Seconds added to the actions' clock (an hour later, a lease later)."""
    workspace_bash = False

    def action_clock(self) -> float:
        return time.time() + type(self).clock_offset

    def get_model(self) -> ScriptedModel:
        return type(self).model

    def get_actions(self) -> list[Any]:
        return [charge, note, explode, delete_account, send_email]

    def authorize_turn(self, ctx: Any) -> Any:
        granted = type(self).granted
        return True if granted is None else {"allowed": True, "granted_permissions": granted}


class CodeShop(Shop):
    """Shop with the execute tool, so code executions and actions pause side by side."""

    def get_tools(self) -> list[Any]:
        from tests.tools.execute.agents import send_email as tool_email
        from think.tools.execute import create_execute_tool

        return [tool_email, create_execute_tool(self, timeout=5)]
