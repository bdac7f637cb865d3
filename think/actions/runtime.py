"""`ActionRuntime`: one agent's actions at run time — authorize, ask, park, run through the ledger.

Collaborators: the agent (its hooks `authorize_turn`/`authorize_action`, its actions, its
transcript for outcomes), the ledger and the parked-approvals store, and a clock. What reaches a
call from outside is checked here and nowhere else: the turn's grant and `authorize_action`
before every run (again when an approved call runs), the approved input against the input that
runs, the ledger before `execute`.
"""

from __future__ import annotations

import inspect
import logging
import uuid
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import anyio

from think.actions.action import Action, ActionContext, call_policy
from think.actions.authorization import (
    FULL_GRANT,
    ActionAuthorizationContext,
    AuthorizationDecision,
    TurnGrants,
    authorize_call,
    decision_from_json,
)
from think.actions.ledger import ActionLedger, Begin
from think.actions.outcomes import (
    ActionApprovalError,
    ActionAuthorizationError,
    ActionPendingError,
    ActionTimeoutError,
    error_output,
    exception_output,
    input_fingerprint,
    is_error_output,
    normalize_output,
)
from think.actions.parked import Parked, ParkedActions
from think.attachments import ReplyAttachments
from think.messages import JSONObject
from think.tools.tool import ToolContext

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger("think.actions")
_CONTEXT_FIELDS = tuple(f.name for f in fields(ToolContext))


class ActionRuntime:
    """The actions of one agent (see the module docs)."""

    def __init__(self, agent: Any, ledger: ActionLedger, parked: ParkedActions, *,
                 actions: Callable[[], dict[str, Action]]) -> None:
        self.agent = agent
        self.ledger = ledger
        self.parked = parked
        self.grants = TurnGrants()
        self._actions = actions

    def action(self, name: str) -> Action | None:
        return self._actions().get(name)

    # ---- authorization ---------------------------------------------------------------------

    def turn_grant(self, request_id: str) -> AuthorizationDecision:
        """The grant `authorize_turn` gave the running turn; a call outside a turn (none was asked)
        is granted everything only while `authorize_turn` is the default."""
        found = self.grants.get(request_id) if request_id else None
        if found is not None:
            return found
        from think.actions.api import ActionsAPI

        if type(self.agent).authorize_turn is ActionsAPI.authorize_turn:
            return FULL_GRANT
        return AuthorizationDecision(allowed=False, reason="no turn authorized this call")

    async def _denial(self, act: Action, arguments: JSONObject, ctx: ActionContext, grant: AuthorizationDecision,
                      *, at_approval: bool) -> JSONObject | None:
        required = await self.required_permissions(act, arguments, ctx)
        decision = await authorize_call(self.agent, ActionAuthorizationContext(
            action=act.name, kind=act.kind, input=arguments, required_permissions=required, grant=grant,
            request_id=ctx.request_id, tool_call_id=ctx.tool_call_id, at_approval=at_approval))
        if decision.allowed:
            return None
        message = f"{act.name!r} is not authorized" + (f": {decision.reason}" if decision.reason else "")
        return ActionAuthorizationError(message).output(action=act.name, required_permissions=list(required))

    async def required_permissions(self, act: Action, arguments: JSONObject, ctx: ActionContext) -> tuple[str, ...]:
        value = await call_policy(act.permissions, arguments, ctx)
        if value is None:
            return ()
        if isinstance(value, str) or not all(isinstance(p, str) for p in value):
            raise TypeError(f"action {act.name!r}: permissions is a list of strings, got {value!r}")
        return tuple(value)

    # ---- the tool's two entry points -----------------------------------------------------------

    async def approval_request(self, act: Action, arguments: JSONObject, tool_ctx: ToolContext | None) -> Any:
        """Asked when the model's call is announced: False (run it now), or the approval
        descriptor for the `tool-approval-request` (the asked-about input is recorded)."""
        ctx = self.context(act, tool_ctx)
        if not await call_policy(act.approval, arguments, ctx):
            return False
        if not ctx.request_id:  # not a chat turn's call (code mode asks, and pauses, on its own)
            return True
        if await self._denial(act, arguments, ctx, self.turn_grant(ctx.request_id), at_approval=False):
            return False  # denied before anyone is asked: the call runs and reports the denial
        descriptor = await self.descriptor(act, arguments, ctx)
        self.parked.record(execution_id=f"approval_{uuid.uuid4().hex[:16]}", kind="approval-gated",
                           tool_call_id=ctx.tool_call_id, request_id=ctx.request_id, action=act.name,
                           input=arguments, fingerprint=input_fingerprint(arguments), descriptor=descriptor,
                           grant=None)
        return descriptor

    async def call(self, act: Action, arguments: JSONObject, tool_ctx: ToolContext) -> Any:
        """The model's call (or its approved or recovered re-run) of `act`."""
        ctx = self.context(act, tool_ctx)
        grant = self.turn_grant(ctx.request_id)
        if act.kind == "durable-pause":
            return await self._park(act, arguments, ctx, grant)
        asked = self.parked.for_call(ctx.tool_call_id, "approval-gated") if act.kind == "approval-gated" else None
        denial = await self._denial(act, arguments, ctx, grant, at_approval=asked is not None)
        if denial is not None:  # also when it was approved: the grant may be gone by now
            return denial
        if asked is not None and asked.fingerprint != input_fingerprint(arguments):
            return ActionApprovalError(f"the input of {act.name!r} is not the input that was approved; "
                                       "it was not run").output(approved_input=asked.input)
        if (act.kind == "approval-gated" and asked is None and ctx.request_id  # a turn asks before it runs
                and await call_policy(act.approval, arguments, ctx)):
            return ActionApprovalError(f"{act.name!r} needs a person's approval, and this call has none; "
                                       "it was not run").output()
        output = await self.run(act, arguments, ctx)
        if asked is not None:
            self.parked.finish(asked.execution_id, "settled", output)
        return output

    def context(self, act: Action, tool_ctx: ToolContext | None) -> ActionContext:
        values = {name: getattr(tool_ctx, name) for name in _CONTEXT_FIELDS} if tool_ctx is not None else {
            "tool_call_id": "", "tool_name": act.name}
        values["agent"] = values.get("agent") or self.agent
        return ActionContext(**values, action=act.name)

    async def descriptor(self, act: Action, arguments: JSONObject, ctx: ActionContext,
                         execution_id: str | None = None) -> JSONObject:
        """What a person is asked: `{requestId, toolCallId, action, summary, input, permissions,
        risk, kind}` (and `executionId` for a parked call)."""
        descriptor: JSONObject = {
            "requestId": ctx.request_id, "toolCallId": ctx.tool_call_id, "action": act.name,
            "summary": act.approval_summary or act.description or act.name, "input": arguments,
            "permissions": list(await self.required_permissions(act, arguments, ctx)), "kind": act.kind}
        if act.approval_risk is not None:
            descriptor["risk"] = act.approval_risk
        if execution_id is not None:
            descriptor["executionId"] = execution_id
        return descriptor

    # ---- durable pause -----------------------------------------------------------------------

    async def _park(self, act: Action, arguments: JSONObject, ctx: ActionContext,
                    grant: AuthorizationDecision) -> Any:
        earlier = self.parked.for_call(ctx.tool_call_id, "durable-pause") if ctx.tool_call_id else None
        if earlier is not None:  # the same call again (a recovery re-run): nothing new is parked
            return earlier.result if earlier.status in ("settled", "rejected") else paused_output(earlier)
        denial = await self._denial(act, arguments, ctx, grant, at_approval=False)
        if denial is not None:
            return denial
        if not await call_policy(act.approval, arguments, ctx):
            return await self.run(act, arguments, ctx)
        execution_id = f"act_{uuid.uuid4().hex[:16]}"
        descriptor = await self.descriptor(act, arguments, ctx, execution_id)
        parked = self.parked.record(execution_id=execution_id, kind="durable-pause", tool_call_id=ctx.tool_call_id,
                                    request_id=ctx.request_id, action=act.name, input=arguments,
                                    fingerprint=input_fingerprint(arguments), descriptor=descriptor,
                                    grant=grant.to_json())
        return paused_output(parked)

    async def resolve(self, parked: Parked) -> Any:
        """Run an approved parked call (its row is `running`): authorization again, then the
        ledger; the outcome is stored before the transcript hears of it."""
        act = self.action(parked.action)
        ctx = ActionContext(tool_call_id=parked.tool_call_id, tool_name=parked.action, request_id=parked.request_id,
                            messages=tuple(self.agent.messages), agent=self.agent, action=parked.action,
                            reply_attachments=ReplyAttachments(parked.request_id, self.agent.db))
        if act is None:
            outcome: Any = error_output("ActionUnavailableError", f"the action {parked.action!r} no longer exists; "
                                        "it was not run")
        else:
            grant = decision_from_json(parked.grant)
            outcome = await self._denial(act, parked.input, ctx, grant, at_approval=True)
            if outcome is None:
                outcome = await self.run(act, parked.input, ctx)
        assert ctx.reply_attachments is not None
        ctx.reply_attachments.settle(parked.tool_call_id, success=not is_error_output(outcome))
        self.parked.finish(parked.execution_id, "settled", outcome)
        return outcome

    # ---- the ledger ----------------------------------------------------------------------------

    async def run(self, act: Action, arguments: JSONObject, ctx: ActionContext) -> Any:
        """`execute` at most once per ledger key; its output, or a structured error output."""
        key_part = await call_policy(act.idempotency_key, arguments, ctx)
        explicit = key_part is not None and key_part != ""
        if explicit and not isinstance(key_part, str):
            raise TypeError(f"action {act.name!r}: idempotency_key must give a string, got {key_part!r}")
        key = f"action:{act.name}:{key_part if explicit else ctx.tool_call_id or uuid.uuid4().hex}"
        running = self.ledger.running(key)
        if running is not None:  # the same key runs in this process now: its result is ours
            return await running
        lease = self.agent.action_ledger_pending_retry_lease
        begun: Begin = self.ledger.begin(key, action=act.name, fingerprint=input_fingerprint(arguments),
                                         explicit=explicit, tool_call_id=ctx.tool_call_id,
                                         lease=float(lease) if lease not in (None, False) else None)
        if begun.verdict == "replay":
            return begun.result  # no attachments either: the side effect happened before
        if begun.verdict == "conflict":
            return error_output("ActionIdempotencyError", f"the key {key!r} was used with another input; "
                                "one idempotency key must always mean the same call")
        if begun.verdict == "pending":
            return ActionPendingError(f"{act.name!r} with key {key!r} was started earlier and its outcome is "
                                      "unknown (still running, or cut off by a restart); it was not run again").output()
        if begun.reclaimed:
            log.warning("action %s: reclaiming the stale pending ledger row %s", act.name, key)
        self.ledger.mark_running(key)
        try:
            value = await self._execute(act, arguments, ctx)
            output = normalize_output(value)
        except BaseException as exc:
            failed = exception_output(exc if not isinstance(exc, TimeoutError) else ActionTimeoutError(
                f"{act.name!r} did not finish within {act.timeout:g} s"))
            self.ledger.release(key, failed)
            ctx.staged.clear()  # the attachments of a failed execute are dropped
            if not isinstance(exc, Exception):
                raise  # cancelled with its turn
            log.info("action %s failed: %s", act.name, failed["error"]["message"])
            return failed
        self.ledger.settle(key, output)
        ctx.publish_attachments()
        return output

    async def _execute(self, act: Action, arguments: JSONObject, ctx: ActionContext) -> Any:
        """`execute` under the action's timeout; `ctx.signal` is set by the turn's stop or the timeout."""
        turn_signal = ctx.signal
        signal = ctx.signal = anyio.Event()
        value: Any = None
        failure: Exception | None = None
        async with anyio.create_task_group() as group:
            if turn_signal is not None:
                async def relay() -> None:
                    await turn_signal.wait()
                    signal.set()

                group.start_soon(relay)
            try:
                with anyio.move_on_after(act.timeout) as timer:
                    value = act.execute(arguments, ctx)
                    if inspect.isawaitable(value):
                        value = await value
            except Exception as exc:  # kept out of the task group's exception group
                failure = exc
            finally:
                group.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if timer.cancelled_caught:
            signal.set()
            raise TimeoutError
        return value


def paused_output(parked: Parked) -> JSONObject:
    """The tool output of a parked call: what the model reads while a person decides."""
    summary = parked.descriptor.get("summary") or parked.action
    return {"status": "paused", "execution_id": parked.execution_id, "action": parked.action,
            "descriptor": parked.descriptor,
            "message": f"Waiting for a person to approve: {summary}. The outcome comes later; do not call it again."}
