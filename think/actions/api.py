"""What `Think` gets from actions: `get_actions()`, the authorization hooks and the settings.

`Think` mixes this in; `all_tools()` adds `action_tools()` after `get_tools()`, and the turn
runner asks `authorize_turn` once per turn (`decide_turn_grant`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from think.actions.action import Action, as_action_map
from think.actions.authorization import (
    ActionAuthorizationContext,
    AuthorizationDecision,
    default_decision,
)
from think.actions.compile import compile_actions
from think.actions.ledger import DEFAULT_LEASE, ActionLedger
from think.actions.parked import DEFAULT_APPROVAL_TTL, ParkedActions
from think.actions.runtime import ActionRuntime

if TYPE_CHECKING:
    from think.hooks import TurnContext
    from think.tools.tool import Tool


class ActionsAPI:
    """Actions for an agent (see `think.actions`)."""

    action_ledger_pending_retry_lease: float | None = DEFAULT_LEASE
    """Seconds after which a pending ledger row with an explicit key (its process died during
    `execute`) may run again; None: never (an `ActionPendingError` instead)."""
    action_pending_approval_ttl: float = DEFAULT_APPROVAL_TTL
    """Seconds a parked (durable-pause) action waits for approval before it expires."""
    _action_runtime: ActionRuntime | None = None

    def get_actions(self) -> Sequence[Action] | Mapping[str, Action] | None:
        """Actions for every turn: side-effecting tools with a ledger, approvals and permissions
        (see `think.actions.action`). They join the tools after `get_tools()`."""
        return None

    def authorize_turn(self, ctx: TurnContext) -> bool | AuthorizationDecision | dict[str, Any] | None:
        """Once per turn, after `before_turn`: the permissions this turn's actions have. True
        (default): all; False: no action runs; an `AuthorizationDecision` with
        `granted_permissions`: only those. May be async."""
        return True

    def authorize_action(self, ctx: ActionAuthorizationContext) -> bool | AuthorizationDecision | dict[str, Any]:
        """Each action call (again when an approved one runs): by default allowed when the turn's
        grant holds every permission it requires. May be async."""
        return default_decision(ctx)

    def action_clock(self) -> float:
        """The time actions measure leases and approval expiry with (epoch seconds)."""
        return time.time()

    @property
    def action_runtime(self) -> ActionRuntime:
        """The agent's ledger, parked approvals and turn grants (built on first use)."""
        if self._action_runtime is None:
            db = self.db  # type: ignore[attr-defined]
            self._action_runtime = ActionRuntime(self, ActionLedger(db, clock=lambda: self.action_clock()),
                                                 ParkedActions(db, clock=lambda: self.action_clock()),
                                                 actions=self._actions_by_name)
        return self._action_runtime

    def _actions_by_name(self) -> dict[str, Action]:
        """`get_actions()` by tool name."""
        return as_action_map(self.get_actions())

    def _action_tools(self) -> dict[str, Tool]:
        """The actions as tools (see `think.actions.compile`)."""
        return compile_actions(self._actions_by_name(), self)


async def decide_turn_grant(agent: Any, ctx: TurnContext) -> None:
    """Ask `authorize_turn` for a turn (the runner calls it after `before_turn`)."""
    if isinstance(agent, ActionsAPI):
        await agent.action_runtime.grants.decide(agent, ctx)


def forget_turn_grant(agent: Any, request_id: str) -> None:
    if isinstance(agent, ActionsAPI) and agent._action_runtime is not None:
        agent._action_runtime.grants.forget(request_id)
