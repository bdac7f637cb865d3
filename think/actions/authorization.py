"""Who may run an action: the turn's grant (`authorize_turn`) and the per-call check (`authorize_action`).

`Think.authorize_turn(ctx)` runs once per turn, after `before_turn`, and returns True (every
permission), False (no action may run) or an `AuthorizationDecision` (or the same as a dict,
`{"allowed", "reason", "granted_permissions"}`) whose `granted_permissions` narrows the grant.
`Think.authorize_action(ctx)` then decides each call; its default allows a call whose required
permissions are all granted. Both are asked again when an approved call runs, so a grant that
was withdrawn meanwhile stops it. A denial is the `ActionAuthorizationError` output.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from think.messages import JSONObject

if TYPE_CHECKING:
    from think.hooks import TurnContext


@dataclass(frozen=True)
class AuthorizationDecision:
    """A grant or a denial; `granted_permissions=None` grants every permission."""

    allowed: bool = True
    reason: str | None = None
    granted_permissions: tuple[str, ...] | None = None

    def to_json(self) -> JSONObject:
        return {"allowed": self.allowed, "reason": self.reason,
                "granted_permissions": list(self.granted_permissions) if self.granted_permissions is not None
                else None}


FULL_GRANT = AuthorizationDecision()


@dataclass(frozen=True, kw_only=True)
class ActionAuthorizationContext:
    """What `authorize_action` decides on."""

    action: str
    kind: str
    input: JSONObject
    required_permissions: tuple[str, ...]
    grant: AuthorizationDecision
    """The turn's grant (`authorize_turn`); for a parked call approved later, the parking turn's."""
    request_id: str = ""
    tool_call_id: str = ""
    at_approval: bool = False
    """True when a person's approval is about to run the call (the check is made again then)."""

    @property
    def granted_permissions(self) -> tuple[str, ...] | None:
        return self.grant.granted_permissions


def decision_of(value: Any, where: str) -> AuthorizationDecision:
    """A hook's answer as a decision: True/None allow all, False denies, a dict or a decision."""
    if value is None or value is True:
        return FULL_GRANT
    if value is False:
        return AuthorizationDecision(allowed=False)
    if isinstance(value, AuthorizationDecision):
        return value
    if isinstance(value, dict) and isinstance(value.get("allowed", True), bool):
        granted = value.get("granted_permissions", value.get("grantedPermissions"))
        if granted is not None and (isinstance(granted, str) or not isinstance(granted, Sequence)):
            raise TypeError(f"{where}: granted_permissions is a list of strings, got {granted!r}")
        return AuthorizationDecision(allowed=value.get("allowed", True), reason=value.get("reason"),
                                     granted_permissions=tuple(str(p) for p in granted) if granted is not None
                                     else None)
    raise TypeError(f"{where} returned {value!r}: return True, False, an AuthorizationDecision or a dict "
                    '{"allowed": …, "reason": …, "granted_permissions": [...]}')


def decision_from_json(data: Any) -> AuthorizationDecision:
    return decision_of(data, "a stored grant") if data is not None else FULL_GRANT


def default_decision(ctx: ActionAuthorizationContext) -> AuthorizationDecision:
    """The turn's grant must allow actions and hold every permission the call requires."""
    if not ctx.grant.allowed:
        return AuthorizationDecision(allowed=False, reason=ctx.grant.reason or "this turn may not run actions")
    granted = ctx.grant.granted_permissions
    if granted is None:
        return FULL_GRANT
    missing = [p for p in ctx.required_permissions if p not in granted]
    if missing:
        return AuthorizationDecision(allowed=False, reason=f"missing permission(s): {', '.join(missing)}")
    return FULL_GRANT


async def _answer(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class TurnGrants:
    """The grant of each running turn, by request id (asked once per turn; forgotten at its end)."""

    def __init__(self) -> None:
        self._by_request: dict[str, AuthorizationDecision] = {}

    async def decide(self, agent: Any, ctx: TurnContext) -> AuthorizationDecision:
        decision = decision_of(await _answer(agent.authorize_turn(ctx)), "authorize_turn")
        self._by_request[ctx.request_id] = decision
        return decision

    def get(self, request_id: str) -> AuthorizationDecision | None:
        return self._by_request.get(request_id)

    def forget(self, request_id: str) -> None:
        self._by_request.pop(request_id, None)


async def authorize_call(agent: Any, ctx: ActionAuthorizationContext) -> AuthorizationDecision:
    return decision_of(await _answer(agent.authorize_action(ctx)), "authorize_action")
