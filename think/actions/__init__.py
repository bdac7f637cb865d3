"""Actions: tools that change the world, run at most once, approved by a person when they must be.

    class Billing(Think):
        def get_actions(self):
            return [charge_invoice, send_draft]

    @action(idempotency_key=lambda input, ctx: f"invoice:{input['invoice_id']}", permissions=["billing:charge"])
    async def charge_invoice(invoice_id: str, cents: int) -> dict:
        '''Charge an invoice.'''
        ...

    @action(kind="durable-pause", approval_summary="Send the email", approval_risk="medium")
    async def send_draft(ctx: ActionContext, to: str, body: str) -> str:
        ...

`action(...)` / `@action` makes one (`think.actions.action`); `Think.get_actions()` returns them
and they join the tools after `get_tools()`. Each call goes through the idempotency ledger in the
agent's SQLite (`think.actions.ledger`: a key's side effect runs at most once, across retries,
recoveries and regenerations), the turn's grant and `authorize_action`
(`think.actions.authorization`), and — for `approval-gated` and `durable-pause` actions — a
person's approval (`think.actions.approvals`: `pending_approvals`, `approve_execution`,
`reject_execution`, shared with paused code executions).

What this package trusts: the agent's own code (its actions, `authorize_turn`,
`authorize_action`) and its database. It trusts nothing a client says about a call: approvals
of gated calls reach it only through `think.turns.trust`, the input that runs must be the input
that was approved, and authorization is decided again when an approved call runs.
"""

from __future__ import annotations

from think.actions.action import Action, ActionContext, ActionKind, action
from think.actions.authorization import ActionAuthorizationContext, AuthorizationDecision
from think.actions.ledger import MIGRATIONS as _LEDGER_MIGRATIONS
from think.actions.outcomes import (
    ActionApprovalError,
    ActionAuthorizationError,
    ActionError,
    ActionPendingError,
    ActionTimeoutError,
)
from think.actions.parked import MIGRATIONS as _PARKED_MIGRATIONS

MIGRATIONS = [*_LEDGER_MIGRATIONS, *_PARKED_MIGRATIONS]

__all__ = [
    "MIGRATIONS",
    "Action",
    "ActionApprovalError",
    "ActionAuthorizationContext",
    "ActionAuthorizationError",
    "ActionContext",
    "ActionError",
    "ActionKind",
    "ActionPendingError",
    "ActionTimeoutError",
    "AuthorizationDecision",
    "action",
]
