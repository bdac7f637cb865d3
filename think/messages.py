"""The conversation data model: AI SDK `UIMessage`s and their parts.

A `Message` is exactly the JSON object that `useChat` keeps in the browser, so what we store, what
we broadcast and what the client sends back are the same shape. Field names are snake_case in
Python and camelCase on the wire (`tool_call_id` ↔ `toolCallId`); unknown fields are kept and
written back unchanged, so a newer client's additions survive a round trip through our storage.

Validation happens where JSON enters (`Message.from_json`, `Message.model_validate`); code that
builds messages itself constructs the part classes directly.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Any, Literal, TypeAlias

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    TypeAdapter,
    ValidationError,
    model_serializer,
)
from pydantic.alias_generators import to_camel
from pydantic_core import SchemaError, SchemaValidator, core_schema

JSONValue: TypeAlias = Any
"""Any value that survives a JSON round trip."""
JSONObject: TypeAlias = dict[str, Any]

Role = Literal["system", "user", "assistant"]
TextState = Literal["streaming", "done"]
ToolState = Literal[
    "input-streaming",
    "input-available",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
    "output-denied",
]
SETTLED_TOOL_STATES: frozenset[str] = frozenset({"output-available", "output-error", "output-denied"})
"""Tool part states that will never change again."""

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# Random bytes become characters in one C call: byte b < 248 (4 × 62) maps to letter b % 62, so
# each letter is equally likely; the 8 larger bytes are dropped (3 % of them) and drawn again.
_KEEP = len(_ALPHABET) * (256 // len(_ALPHABET))
_LETTERS = bytes(ord(_ALPHABET[b % len(_ALPHABET)]) if b < _KEEP else 0 for b in range(256))
_DROP = bytes(range(_KEEP, 256))


def new_id(size: int = 16) -> str:
    """A random id like the AI SDK's `generateId()` (16 alphanumeric characters)."""
    letters = b""
    while len(letters) < size:
        letters += secrets.token_bytes(size + 8).translate(_LETTERS, _DROP)
    return letters[:size].decode()


class _Wire(BaseModel):
    # The validators and serializers are built on first use (`prepare_models()` builds them all
    # at once): building them when the module loads was a third of `from think import Think`.
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        serialize_by_alias=True,
        defer_build=True,
    )

    def to_json(self) -> JSONObject:
        """The wire form: camelCase keys, unset optional fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class TextPart(_Wire):
    type: Literal["text"] = "text"
    text: str = ""
    state: TextState | None = None
    provider_metadata: JSONObject | None = None


class ReasoningPart(_Wire):
    type: Literal["reasoning"] = "reasoning"
    text: str = ""
    state: TextState | None = None
    provider_metadata: JSONObject | None = None


class FilePart(_Wire):
    type: Literal["file"] = "file"
    media_type: str
    url: str
    filename: str | None = None
    provider_reference: JSONValue = None
    provider_metadata: JSONObject | None = None


class ReasoningFilePart(_Wire):
    type: Literal["reasoning-file"] = "reasoning-file"
    media_type: str
    url: str
    provider_metadata: JSONObject | None = None


class CustomPart(_Wire):
    type: Literal["custom"] = "custom"
    kind: str
    provider_metadata: JSONObject | None = None


class SourceUrlPart(_Wire):
    type: Literal["source-url"] = "source-url"
    source_id: str
    url: str
    title: str | None = None
    provider_metadata: JSONObject | None = None


class SourceDocumentPart(_Wire):
    type: Literal["source-document"] = "source-document"
    source_id: str
    media_type: str
    title: str
    filename: str | None = None
    provider_metadata: JSONObject | None = None


class StepStartPart(_Wire):
    type: Literal["step-start"] = "step-start"


class DataPart(_Wire):
    """An application data part; `type` is `data-<name>`."""

    type: Annotated[str, Field(pattern=r"^data-.+")]
    id: str | None = None
    data: JSONValue = None

    @model_serializer(mode="wrap")
    def _keep_data(self, handler: SerializerFunctionWrapHandler) -> JSONObject:
        out: JSONObject = handler(self)
        out.setdefault("data", None)
        return out


class ToolApproval(_Wire):
    id: str
    approved: bool | None = None
    reason: str | None = None
    is_automatic: bool | None = None
    signature: str | None = None


class ToolPart(_Wire):
    """A tool call and its outcome.

    `type` is `tool-<name>` for tools the server knows and `dynamic-tool` (with `tool_name`) for
    the rest. The server also stores `tool_name` on static parts, as Think does.
    """

    # Fields in the order the original writes a part's keys (a stored part matches it byte for byte).
    type: Annotated[str, Field(pattern=r"^(tool-.+|dynamic-tool)$")]
    tool_call_id: str
    tool_name: str | None = None
    state: ToolState
    input: JSONValue = None
    approval: ToolApproval | None = None
    output: JSONValue = None
    error_text: str | None = None
    raw_input: JSONValue = None
    title: str | None = None
    tool_metadata: JSONValue = None
    provider_executed: bool | None = None
    call_provider_metadata: JSONObject | None = None
    result_provider_metadata: JSONObject | None = None
    preliminary: bool | None = None

    @property
    def name(self) -> str:
        """The tool's name, for static and dynamic parts alike."""
        if self.type == "dynamic-tool" or self.tool_name:
            return self.tool_name or ""
        return self.type[5:]

    @property
    def settled(self) -> bool:
        return self.state in SETTLED_TOOL_STATES

    @model_serializer(mode="wrap")
    def _keep_null_output(self, handler: SerializerFunctionWrapHandler) -> JSONObject:
        out: JSONObject = handler(self)
        if self.state == "output-available":
            out.setdefault("output", None)  # a tool that returned nothing still has an output
        return out


def _part_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if not isinstance(kind, str):
        return "invalid"
    if kind.startswith("tool-") or kind == "dynamic-tool":
        return "tool"
    if kind.startswith("data-"):
        return "data"
    return kind


Part = Annotated[
    Annotated[TextPart, Tag("text")]
    | Annotated[ReasoningPart, Tag("reasoning")]
    | Annotated[ToolPart, Tag("tool")]
    | Annotated[StepStartPart, Tag("step-start")]
    | Annotated[FilePart, Tag("file")]
    | Annotated[ReasoningFilePart, Tag("reasoning-file")]
    | Annotated[CustomPart, Tag("custom")]
    | Annotated[SourceUrlPart, Tag("source-url")]
    | Annotated[SourceDocumentPart, Tag("source-document")]
    | Annotated[DataPart, Tag("data")],
    Discriminator(_part_tag),
]


class Message(_Wire):
    """One AI SDK `UIMessage`: `{id, role, metadata?, parts}`."""

    id: Annotated[str, Field(min_length=1, max_length=512)]
    role: Role
    metadata: JSONValue = None
    parts: list[Part] = Field(default_factory=list)

    @classmethod
    def user(cls, text: str, *, id: str | None = None) -> Message:
        """A user message with one text part."""
        return cls(id=id or new_id(), role="user", parts=[TextPart(text=text)])

    @classmethod
    def from_json(cls, data: JSONObject | str | bytes) -> Message:
        """Validate untrusted JSON (a dict or its text) into a message.

        Raises pydantic's ValidationError with the path of the first bad field.
        """
        if isinstance(data, (str, bytes)):  # a tuple: no union object built per call
            if cls is Message:
                try:
                    message: Message = _json_validator().validate_json(data)
                    return message
                except ValidationError:
                    pass  # validated again below, for the error in `Message`'s words
            return cls.model_validate_json(data)
        return cls.model_validate(data)

    @property
    def text(self) -> str:
        """The text parts, separated by blank lines, the way a reader sees the answer."""
        return "\n\n".join(p.text for p in self.parts if isinstance(p, TextPart) and p.text)

    @property
    def tool_parts(self) -> list[ToolPart]:
        return [p for p in self.parts if isinstance(p, ToolPart)]

    def dumps(self) -> bytes:
        """The wire form as compact JSON bytes (what we store and send)."""
        return orjson.dumps(self.to_json())

    def copy_deep(self) -> Message:
        return self.model_copy(deep=True)


def _keyed_parts(schema: Any) -> Any:
    """`schema` with the parts union found by `type`'s value, not by calling `_part_tag`.

    From JSON text, pydantic hands a callable discriminator the part converted to Python objects
    (its text copied once more), a fifth of decoding a stored message. The keyed union looks the
    tag up in the JSON itself; `tool-…` and `data-…`, which no key can name, are tried after it,
    in the order `_part_tag` would pick them. It accepts exactly what the `Message` schema does,
    with the same result (a test decodes every part kind both ways), only its errors are worded
    after its own members: `from_json` takes the error from `Message`'s schema instead.
    """
    if isinstance(schema, list):
        return [_keyed_parts(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("type") == "tagged-union" and schema.get("discriminator") is _part_tag:
        choices = schema["choices"]
        keyed = core_schema.tagged_union_schema(
            {tag: choice for tag, choice in choices.items() if tag not in ("tool", "data")}, discriminator="type")
        return core_schema.union_schema([keyed, choices["tool"], choices["data"]], mode="left_to_right")
    return {key: _keyed_parts(value) for key, value in schema.items()}


_JSON_VALIDATOR: SchemaValidator | None = None


def _json_validator() -> SchemaValidator:
    """The validator `from_json` uses: `Message`'s schema with `_keyed_parts`, built once. Should
    a pydantic release lay out its schemas otherwise, `Message`'s own validator (same results)."""
    global _JSON_VALIDATOR
    if _JSON_VALIDATOR is None:
        Message.model_rebuild()
        own = Message.__pydantic_validator__
        assert isinstance(own, SchemaValidator)
        schema = Message.__pydantic_core_schema__
        model = schema.get("schema", {}) if schema.get("type") == "definitions" else schema
        # pydantic-core reuses a complete model's own validator for a model schema naming its class
        # (which would bring the callable back): marked incomplete, it builds the schema given.
        Message.__pydantic_complete__ = False
        try:
            _JSON_VALIDATOR = SchemaValidator(_keyed_parts(schema), model.get("config"))
        except (KeyError, TypeError, SchemaError):  # a schema laid out otherwise: the model's own
            _JSON_VALIDATOR = own
        finally:
            Message.__pydantic_complete__ = True
    return _JSON_VALIDATOR


MESSAGES = TypeAdapter(list[Message], config=ConfigDict(defer_build=True))
"""Validates a JSON array of messages from an untrusted source."""


def prepare_models() -> None:
    """Build every message model's validator and serializer now rather than on first use (a server
    does this as it starts, so its first request does not pay for them). Models already built are
    left as they are, so a second app in the process costs nothing."""
    for model in (TextPart, ReasoningPart, FilePart, ReasoningFilePart, CustomPart, SourceUrlPart,
                  SourceDocumentPart, StepStartPart, DataPart, ToolApproval, ToolPart, Message):
        model.model_rebuild()
    MESSAGES.rebuild()
    _json_validator()


def messages_to_json(messages: list[Message]) -> list[JSONObject]:
    return [m.to_json() for m in messages]
