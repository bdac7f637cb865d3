"""`Action`, `action()` / `@action` and `ActionContext`: what an action is, before it is a tool.

    @action(idempotency_key=lambda input, ctx: f"invoice:{input['invoice_id']}")
    async def charge_invoice(ctx: ActionContext, invoice_id: str) -> dict:
        '''Charge an invoice.'''
        return await billing.charge(invoice_id)

An action is a description, an input schema (a typed function's signature, a pydantic model or a
JSON Schema dict), an `execute(input, ctx)` and its policies: an idempotency key, the permissions
it needs, whether a person approves it (`approval`, `kind`), a timeout. `think.actions.compile`
turns it into the `Tool` the model calls.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, overload

from pydantic import BaseModel, ValidationError

from think.errors import ConfigurationError
from think.messages import JSONObject
from think.tools.tool import InvalidToolInput, Tool, ToolContext, tool

ActionKind = Literal["server", "approval-gated", "durable-pause"]
Risk = Literal["low", "medium", "high"]
Policy: TypeAlias = Callable[[JSONObject, "ActionContext"], Any]
"""A function of `(input, ctx)`, sync or async."""
KeyPolicy: TypeAlias = str | Policy | None
PermissionsPolicy: TypeAlias = Sequence[str] | Policy | None
ApprovalPolicy: TypeAlias = bool | Policy | None
DEFAULT_TIMEOUT = 30.0
"""Seconds an action's `execute` may run by default."""


@dataclass(kw_only=True)
class ActionContext(ToolContext):
    """What `execute` knows: the agent, `request_id`, `tool_call_id`, `messages`, and `signal`
    (set when the turn is stopped or the action's timeout passes). `attach_reply` keeps delivery
    metadata for the reply only if `execute` succeeds, and never on a ledger replay."""

    action: str = ""
    """The action's name."""
    staged: list[JSONObject] = field(default_factory=list)
    """Attachments `execute` made; handed to the turn when it succeeds."""
    recording: bool = True
    """False in policy callbacks (`permissions`, `approval`, `idempotency_key`): attachments are ignored."""

    def attach_reply(self, attachment: JSONObject) -> bool:
        if not self.recording:
            return False
        self.staged.append(attachment)
        return True

    def publish_attachments(self) -> None:
        """`execute` succeeded: its attachments join the turn's (outside a turn, none are kept)."""
        staged, self.staged = self.staged, []
        if self.reply_attachments is None:
            return
        for attachment in staged:
            self.reply_attachments.attach(self.tool_call_id, attachment)


@dataclass(frozen=True, kw_only=True)
class Action:
    """An action (see the module docs); `compile_action` makes it a `Tool`."""

    name: str
    description: str
    input_schema: JSONObject
    execute: Callable[[JSONObject, ActionContext], Any]
    validate_input: Callable[[JSONObject], JSONObject] | None = None
    idempotency_key: KeyPolicy = None
    permissions: PermissionsPolicy = None
    approval: ApprovalPolicy = None
    approval_summary: str | None = None
    approval_risk: Risk | None = None
    kind: ActionKind = "server"
    timeout: float = DEFAULT_TIMEOUT
    output_schema: JSONObject | None = None

    def check_input(self, arguments: JSONObject) -> JSONObject:
        return self.validate_input(arguments) if self.validate_input is not None else arguments


async def call_policy(policy: Any, arguments: JSONObject, ctx: ActionContext) -> Any:
    """The value of a policy: itself, or what the function of `(input, ctx)` returns."""
    if not callable(policy):
        return policy
    ctx.recording = False
    try:
        value = policy(arguments, ctx)
        if inspect.isawaitable(value):
            value = await value
    finally:
        ctx.recording = True
    return value


def _schema_of(input_schema: Any) -> tuple[JSONObject, Callable[[JSONObject], JSONObject] | None]:
    if isinstance(input_schema, type) and issubclass(input_schema, BaseModel):
        model = input_schema

        def validate(arguments: JSONObject) -> JSONObject:
            try:
                return model.model_validate(arguments).model_dump(mode="json")
            except ValidationError as exc:
                raise InvalidToolInput(f"Invalid arguments: {exc.errors()[0]['msg']}") from exc

        schema = model.model_json_schema()
        schema.pop("title", None)
        return schema, validate
    if isinstance(input_schema, dict):
        if input_schema.get("type", "object") != "object":
            raise ConfigurationError("an action's input_schema describes an object (\"type\": \"object\")")
        required = [str(k) for k in input_schema.get("required", ())]

        def check(arguments: JSONObject) -> JSONObject:
            missing = [k for k in required if k not in arguments]
            if missing:
                raise InvalidToolInput(f"Invalid arguments: missing {', '.join(missing)}")
            return arguments

        return {"properties": {}, **input_schema, "type": "object"}, check
    raise ConfigurationError(f"input_schema must be a pydantic model class or a JSON Schema dict, "
                             f"not {type(input_schema).__name__}")


def _from_function(fn: Callable[..., Any], name: str | None,
                   description: str | None) -> tuple[str, str, JSONObject, Callable[..., Any], Any]:
    base: Tool = tool(name=name, description=description)(fn)
    assert base.execute is not None
    return base.name, base.description, base.input_schema, base.execute, base.validate_input


def _make(execute: Callable[..., Any], *, description: str | None, input_schema: Any, name: str | None,
          idempotency_key: KeyPolicy, permissions: PermissionsPolicy, approval: ApprovalPolicy,
          approval_summary: str | None, approval_risk: Risk | None, kind: ActionKind | None, timeout: float,
          output_schema: JSONObject | None) -> Action:
    if input_schema is None:  # a typed function: its signature is the schema
        name, text, schema, run, validate = _from_function(execute, name, description)
    else:
        if not name:
            name = getattr(execute, "__name__", None)
        if not name or name == "<lambda>":
            raise ConfigurationError("an action needs a name (name=…, or a named execute function)")
        schema, validate = _schema_of(input_schema)
        text, run = description if description is not None else inspect.getdoc(execute) or "", execute
    if kind is None:
        kind = "approval-gated" if approval not in (None, False) else "server"
    if kind not in ("server", "approval-gated", "durable-pause"):
        raise ConfigurationError(f"action {name!r}: kind must be 'server', 'approval-gated' or 'durable-pause'")
    if kind != "server" and approval is None:
        approval = True
    if kind == "durable-pause" and approval is False:
        raise ConfigurationError(f"action {name!r}: a durable-pause action with approval=False would never park")
    if approval_risk not in (None, "low", "medium", "high"):
        raise ConfigurationError(f"action {name!r}: approval_risk is 'low', 'medium' or 'high'")
    if not timeout or timeout <= 0:
        raise ConfigurationError(f"action {name!r}: timeout is a positive number of seconds")
    Tool(name=name)  # the name rules of tools
    return Action(name=name, description=text, input_schema=schema, execute=run, validate_input=validate,
                  idempotency_key=idempotency_key, permissions=permissions, approval=approval,
                  approval_summary=approval_summary, approval_risk=approval_risk, kind=kind,
                  timeout=float(timeout), output_schema=output_schema)


@overload
def action(fn: Callable[..., Any], /, *, description: str | None = None, input_schema: Any = None,
           execute: None = None, name: str | None = None,
           idempotency_key: KeyPolicy = None, permissions: PermissionsPolicy = None,
           approval: ApprovalPolicy = None, approval_summary: str | None = None,
           approval_risk: Risk | None = None, kind: ActionKind | None = None, timeout: float = DEFAULT_TIMEOUT,
           output_schema: JSONObject | None = None) -> Action: ...


@overload
def action(fn: None = None, /, *, description: str | None = None, input_schema: Any = None,
           execute: Callable[..., Any], name: str | None = None,
           idempotency_key: KeyPolicy = None, permissions: PermissionsPolicy = None,
           approval: ApprovalPolicy = None, approval_summary: str | None = None,
           approval_risk: Risk | None = None, kind: ActionKind | None = None, timeout: float = DEFAULT_TIMEOUT,
           output_schema: JSONObject | None = None) -> Action: ...


@overload
def action(fn: None = None, /, *, description: str | None = None, input_schema: Any = None,
           execute: None = None, name: str | None = None,
           idempotency_key: KeyPolicy = None, permissions: PermissionsPolicy = None,
           approval: ApprovalPolicy = None, approval_summary: str | None = None,
           approval_risk: Risk | None = None, kind: ActionKind | None = None, timeout: float = DEFAULT_TIMEOUT,
           output_schema: JSONObject | None = None) -> Callable[[Callable[..., Any]], Action]: ...


def action(fn: Callable[..., Any] | None = None, /, *, description: str | None = None, input_schema: Any = None,
           execute: Callable[..., Any] | None = None, name: str | None = None,
           idempotency_key: KeyPolicy = None, permissions: PermissionsPolicy = None,
           approval: ApprovalPolicy = None, approval_summary: str | None = None,
           approval_risk: Risk | None = None, kind: ActionKind | None = None, timeout: float = DEFAULT_TIMEOUT,
           output_schema: JSONObject | None = None) -> Any:
    """An action: `action(description=…, input_schema=…, execute=…)`, or `@action` /
    `@action(...)` over a typed function (its first parameter may be an `ActionContext`).

    `idempotency_key`: a string or a function of `(input, ctx)`; the ledger key is
    `action:<name>:<key>` (without one: the tool call id). `permissions`: a list or a function
    of `(input, ctx)`. `approval`: True or a function of `(input, ctx)` asks a person first;
    `kind` is then "approval-gated" (the turn waits for `cf_agent_tool_approval`) or
    "durable-pause" (parked until `approve_execution`). `timeout` in seconds."""
    options: dict[str, Any] = dict(description=description, input_schema=input_schema, name=name,
                                   idempotency_key=idempotency_key, permissions=permissions, approval=approval,
                                   approval_summary=approval_summary, approval_risk=approval_risk, kind=kind,
                                   timeout=timeout, output_schema=output_schema)
    if fn is not None:
        return _make(fn, **options)
    if execute is not None:
        return _make(execute, **options)

    def wrap(f: Callable[..., Any]) -> Action:
        return _make(f, **options)

    return wrap


def as_action_map(actions: Sequence[Action] | Mapping[str, Action] | None) -> dict[str, Action]:
    """`get_actions()` as a mapping of tool name to action (a mapping's keys win over names)."""
    if not actions:
        return {}
    items = actions.items() if isinstance(actions, Mapping) else ((a.name, a) for a in actions)
    out: dict[str, Action] = {}
    for key, value in items:
        if not isinstance(value, Action):
            raise ConfigurationError(f"get_actions(): {value!r} is not an action (use think.actions.action)")
        if key in out:
            raise ConfigurationError(f"two actions are named {key!r}")
        out[key] = value if value.name == key else _renamed(value, key)
    return out


def _renamed(value: Action, name: str) -> Action:
    from dataclasses import replace

    return replace(value, name=name)

