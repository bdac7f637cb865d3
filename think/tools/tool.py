"""`Tool` and `@tool`: a typed function whose signature and docstring are its schema.

    @tool
    async def convert(amount: float, *, currency: str) -> str:
        '''Convert an amount to another currency.

        Args:
            amount: How much, in euros.
            currency: ISO 4217 code, such as "USD".
        '''

A first parameter annotated `ToolContext` is filled in by the loop and never shown to the model.
A tool without `execute` is a client tool: the turn ends with its call `input-available` and the
browser (or the caller) supplies the output.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from think.errors import ConfigurationError
from think.messages import JSONObject, Message

if TYPE_CHECKING:
    import anyio

    from think.attachments import ReplyAttachments

ToolOutput: TypeAlias = Any
Execute: TypeAlias = Callable[
    [JSONObject, "ToolContext"], "Awaitable[ToolOutput] | AsyncIterator[ToolOutput] | ToolOutput"]
NeedsApproval: TypeAlias = bool | Callable[..., Any]
"""True, or a function of the input (or of the input and the `ToolContext`) that says whether to ask;
it may answer with an approval descriptor (a dict), which the `tool-approval-request` carries."""
_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


@dataclass(kw_only=True)
class ToolContext:
    """What a running tool may know about the call and the turn."""

    tool_call_id: str
    tool_name: str
    request_id: str = ""
    trigger: str = ""
    """What started the turn (`think.turns.turn.TurnTrigger`)."""
    message_id: str = ""
    """The assistant message the call is part of (the same after a crash recovery continues it)."""
    messages: Sequence[Message] = ()
    """The transcript the turn started from."""
    agent: Any = None
    """The agent running the turn, when there is one."""
    reply_attachments: ReplyAttachments | None = None
    """The turn's reply attachments (set by the turn; see `attach_reply`)."""
    signal: anyio.Event | None = None
    """The turn's cancel signal: set when the turn is stopped (the call is then cancelled too)."""

    def attach_reply(self, attachment: JSONObject) -> bool:
        """Attach delivery metadata (`{"type": "card", …}`) to the turn's reply; it is dropped if
        this tool call fails. Returns False when the turn already has the most it may keep."""
        if self.reply_attachments is None:
            raise ConfigurationError("attach_reply() works inside a turn's tool call only")
        return self.reply_attachments.attach(self.tool_call_id, attachment)


class InvalidToolInput(ValueError):
    """The model's arguments do not match the tool's input schema."""


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A tool the model may call."""

    name: str
    description: str = ""
    input_schema: JSONObject = field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema of the arguments object, as the model sees it."""
    execute: Execute | None = None
    """`execute(input, ctx)`: sync, async, or an async generator of preliminary outputs (the last
    one is final). None makes this a client tool."""
    needs_approval: NeedsApproval = False
    """True, or a function of the input, to ask a person before the tool runs."""
    validate_input: Callable[[JSONObject], JSONObject] | None = None
    """Checks and normalizes the model's arguments; raises `InvalidToolInput`."""
    recovery: Literal["report", "rerun"] = "report"
    """What crash recovery does with a call that was running: report it as failed, or run it again."""
    title: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ConfigurationError(
                f"tool name {self.name!r} is not valid: use 1-128 letters, digits, '_', '-', '.' or ':'"
            )

    @property
    def is_client_tool(self) -> bool:
        return self.execute is None

    def check_input(self, arguments: JSONObject) -> JSONObject:
        """The validated input, or `InvalidToolInput` with a message for the model."""
        if self.validate_input is None:
            return arguments
        return self.validate_input(arguments)

    async def requires_approval(self, arguments: JSONObject, ctx: ToolContext | None = None) -> bool:
        return bool(await self.approval_request(arguments, ctx))

    async def approval_request(self, arguments: JSONObject, ctx: ToolContext | None = None) -> bool | JSONObject:
        """Whether to ask a person before running: False, True, or an approval descriptor."""
        decision = self.needs_approval
        if callable(decision):
            takes_context = len(inspect.signature(decision).parameters) >= 2
            result = decision(arguments, ctx) if takes_context else decision(arguments)
            if inspect.isawaitable(result):
                result = await result
            return result if isinstance(result, dict) else bool(result)
        return bool(decision)


def _docstring_parts(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description and the per-argument texts of a Google-style docstring."""
    if not doc:
        return "", {}
    doc = inspect.cleandoc(doc)
    match = re.search(r"^(Args|Arguments|Parameters):\s*$", doc, re.MULTILINE)
    if not match:
        return doc.strip(), {}
    description = doc[: match.start()].strip()
    params: dict[str, str] = {}
    current: str | None = None
    for line in doc[match.end() :].splitlines():
        if line and not line.startswith((" ", "\t")):
            break  # the next section (Returns:, Raises:, ...)
        entry = re.match(r"^\s{1,8}(\*{0,2}\w+)\s*(?:\([^)]*\))?:\s*(.*)$", line)
        if entry and (current is None or len(line) - len(line.lstrip()) <= 8):
            current = entry.group(1).lstrip("*")
            params[current] = entry.group(2).strip()
        elif current and line.strip():
            params[current] = f"{params[current]} {line.strip()}".strip()
    return description, params


def _is_context(annotation: Any) -> bool:
    """A `ToolContext` parameter, or one of a subclass (an action's `ActionContext`)."""
    if isinstance(annotation, type):
        return issubclass(annotation, ToolContext)
    return annotation in ("ToolContext", "ActionContext")


def _to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


@dataclass(frozen=True)
class _Shape:
    """What a function's signature and docstring say, built once per function definition."""

    model: type[BaseModel]
    schema: JSONObject
    summary: str
    fields: tuple[str, ...]
    positional: tuple[str, ...]
    wants_context: bool


_SHAPES: dict[tuple[Any, ...], _Shape] = {}


def _shape_key(fn: Callable[..., Any]) -> tuple[Any, ...] | None:
    # Closures made from one `def` (a tool built per agent) share code, annotations and docstring;
    # building a pydantic model for each would cost milliseconds per agent.
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    try:
        annotations = tuple(sorted((k, repr(v)) for k, v in getattr(fn, "__annotations__", {}).items()))
        defaults = repr(getattr(fn, "__defaults__", None)) + repr(getattr(fn, "__kwdefaults__", None))
    except Exception:
        return None
    return (code, annotations, defaults, fn.__doc__, getattr(fn, "__module__", None))


def _shape(fn: Callable[..., Any]) -> _Shape:
    key = _shape_key(fn)
    if key is not None and (cached := _SHAPES.get(key)) is not None:
        return cached
    shape = _build_shape(fn)
    if key is not None and len(_SHAPES) < 4096:
        _SHAPES[key] = shape
    return shape


def _from_function(fn: Callable[..., Any], *, name: str | None, description: str | None,
                   needs_approval: NeedsApproval, recovery: Literal["report", "rerun"]) -> Tool:
    shape = _shape(fn)
    model, fields, positional, wants_context = shape.model, shape.fields, shape.positional, shape.wants_context

    def validate(arguments: JSONObject) -> JSONObject:
        try:
            parsed = model.model_validate(arguments)
        except ValidationError as exc:
            raise InvalidToolInput(_describe_validation_error(exc)) from exc
        return {key: getattr(parsed, key) for key in fields}

    def execute(arguments: JSONObject, ctx: ToolContext) -> Any:
        leading = [ctx] if wants_context else []
        leading += [arguments[key] for key in positional if key in arguments]
        keywords = {k: v for k, v in arguments.items() if k not in positional}
        return fn(*leading, **keywords)

    return Tool(
        name=name or fn.__name__,
        description=description if description is not None else shape.summary,
        input_schema=shape.schema,
        execute=execute,
        needs_approval=needs_approval,
        validate_input=validate,
        recovery=recovery,
    )


def _build_shape(fn: Callable[..., Any]) -> _Shape:
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # a forward reference that does not resolve
        raise ConfigurationError(f"cannot read the type hints of tool {fn.__name__!r}: {exc}") from exc
    summary, arg_docs = _docstring_parts(fn.__doc__)
    wants_context = False
    fields: dict[str, Any] = {}
    params = list(signature.parameters.values())
    for index, param in enumerate(params):
        annotation = hints.get(param.name, Any)
        if index == 0 and _is_context(annotation):
            wants_context = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigurationError(f"tool {fn.__name__!r}: *args and **kwargs cannot be described to a model")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, Field(default, description=arg_docs.get(param.name)))
    model = create_model(f"{fn.__name__}_input", __config__=ConfigDict(extra="forbid"), **fields)
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    positional = tuple(p.name for p in params if p.kind is p.POSITIONAL_ONLY)
    return _Shape(model, schema, summary, tuple(fields), positional, wants_context)


def _describe_validation_error(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "input"
        problems.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - 5
    suffix = f" (and {more} more)" if more > 0 else ""
    return "Invalid arguments: " + "; ".join(problems) + suffix


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: NeedsApproval = False,
    recovery: Literal["report", "rerun"] = "report",
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: NeedsApproval = False,
    recovery: Literal["report", "rerun"] = "report",
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a `Tool`; usable bare (`@tool`) or with options (`@tool(name=...)`)."""

    def wrap(f: Callable[..., Any]) -> Tool:
        return _from_function(f, name=name, description=description,
                              needs_approval=needs_approval, recovery=recovery)

    return wrap(fn) if fn is not None else wrap


def client_tool(name: str, *, description: str = "", input_schema: JSONObject | None = None) -> Tool:
    """A tool the browser (or another caller) executes; the turn pauses until its output arrives."""
    return Tool(name=name, description=description,
                input_schema=input_schema or {"type": "object", "properties": {}})


def is_client_call(name: str, tools: Mapping[str, Tool]) -> bool:
    """A call of the tool `name` is answered by the client, not run here: no tool of the turn
    has that name (the browser registered it), or the one that has it has no `execute`
    (`client_tool(...)`). The one rule for "is this a client tool" everywhere."""
    found = tools.get(name)
    return found is None or found.is_client_tool


def waits_for_answer(message: Message, tools: Mapping[str, Tool]) -> bool:
    """True if an assistant message waits for a person or a client: a call asking for approval,
    or a client tool call (`is_client_call`) without its output."""
    return any(p.state == "approval-requested" or (p.state == "input-available" and is_client_call(p.name, tools))
               for p in message.tool_parts)


ToolsLike: TypeAlias = Sequence[Tool] | Mapping[str, Tool] | None


def as_tool_map(tools: ToolsLike) -> dict[str, Tool]:
    """Normalize `get_tools()` results: a list (names from the tools) or a mapping (keys win)."""
    if not tools:
        return {}
    if isinstance(tools, Mapping):
        out: dict[str, Tool] = {}
        for key, value in tools.items():
            if not isinstance(value, Tool):
                raise ConfigurationError(f"tool {key!r} is {type(value).__name__}, not a think.Tool")
            out[key] = value if value.name == key else _renamed(value, key)
        return out
    result: dict[str, Tool] = {}
    for item in tools:
        if not isinstance(item, Tool):
            raise ConfigurationError(f"{item!r} is not a think.Tool (decorate functions with @tool)")
        if item.name in result:
            raise ConfigurationError(f"two tools are named {item.name!r}")
        result[item.name] = item
    return result


def _renamed(value: Tool, name: str) -> Tool:
    from dataclasses import replace

    return replace(value, name=name)


def jsonable_output(value: Any) -> Any:
    """Tool outputs as JSON values: pydantic models are dumped; the rest must already be JSON."""
    return _to_jsonable(value)
