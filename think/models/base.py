"""The model protocol and what a model is asked: `ModelRequest` of provider-neutral messages."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from think.models.events import StreamEvent

# ---- provider-neutral conversation (what the adapters translate) -------------------------------


@dataclass(frozen=True, slots=True)
class TextContent:
    text: str


@dataclass(frozen=True, slots=True)
class FileContent:
    """A file for a multimodal model. `data` is a URL (often a `data:` URL)."""

    media_type: str
    data: str
    filename: str | None = None


@dataclass(frozen=True, slots=True)
class ReasoningContent:
    text: str
    provider_metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCallContent:
    id: str
    name: str
    arguments: dict[str, Any]
    provider_metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolResultContent:
    call_id: str
    name: str
    output: Any
    """The tool's output (any JSON); for errors, the error text."""
    is_error: bool = False


UserContent: TypeAlias = TextContent | FileContent
AssistantContent: TypeAlias = TextContent | ReasoningContent | ToolCallContent | FileContent


@dataclass(frozen=True, slots=True)
class UserMessage:
    content: tuple[UserContent, ...]
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    content: tuple[AssistantContent, ...]
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True)
class ToolMessage:
    results: tuple[ToolResultContent, ...]
    role: Literal["tool"] = "tool"


ModelMessage: TypeAlias = UserMessage | AssistantMessage | ToolMessage


def split_file_output(output: Any) -> tuple[Any, FileContent | None]:
    """A tool output that carries a file, as (the tool result the model reads, the file).

    The convention: a dict with `"type": "file"`, a `mediaType` and the content as a URL (usually
    a `data:` URL) in `data`; optional `filename` (or `name`) and `text` (what the model reads as
    the result; default: the dict without `data`). Any other output comes back as `(output, None)`.
    """
    if not (isinstance(output, dict) and output.get("type") == "file" and isinstance(output.get("mediaType"), str)
            and isinstance(output.get("data"), str)):
        return output, None
    filename = output.get("filename") or output.get("name")
    file = FileContent(output["mediaType"], output["data"], filename if isinstance(filename, str) else None)
    text = output.get("text")
    return (text if isinstance(text, str) else {k: v for k, v in output.items() if k != "data"}), file


def tool_results_message(results: Sequence[ToolResultContent]) -> list[ModelMessage]:
    """A tool message for `results`, followed by a user message with the files any of them
    returned (see `split_file_output`): most providers take images and PDFs only from the user."""
    if not results:
        return []
    kept: list[ToolResultContent] = []
    files: list[UserContent] = []
    for result in results:
        output, file = split_file_output(result.output)
        if file is not None and not result.is_error:
            kept.append(ToolResultContent(result.call_id, result.name, output, result.is_error))
            files.append(file)
        else:
            kept.append(result)
    out: list[ModelMessage] = [ToolMessage(tuple(kept))]
    if files:
        out.append(UserMessage(tuple(files)))
    return out


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it."""

    name: str
    description: str
    input_schema: dict[str, Any]


CONTINUE_PROMPT = "Continue your previous response from exactly where it left off. Do not repeat any of it."
"""The ephemeral user message that ends a request continuing a cut-off reply (never stored; see
`think.turns.extend`)."""

ToolChoice: TypeAlias = Literal["auto", "none", "required"] | dict[str, str]
"""`"auto"`, `"none"`, `"required"` or `{"type": "tool", "name": ...}`."""


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    """Per-call knobs. `None` means "the provider's default"."""

    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop_sequences: tuple[str, ...] | None = None
    seed: int | None = None
    tool_choice: ToolChoice | None = None
    headers: dict[str, str] | None = None
    provider_options: dict[str, Any] | None = None
    timeout: float | None = None


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """Everything one model call needs."""

    system: str
    messages: tuple[ModelMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    settings: ModelSettings = field(default_factory=ModelSettings)

    @property
    def last_user_text(self) -> str:
        """The text of the newest user message ("" if there is none): what a scripted or a
        rule-based model usually answers. The `CONTINUE_PROMPT` of a continued reply is not
        the user's: it is skipped."""
        for message in reversed(self.messages):
            if isinstance(message, UserMessage):
                text = "".join(c.text for c in message.content if isinstance(c, TextContent))
                if text != CONTINUE_PROMPT:
                    return text
        return ""

    @property
    def continuing(self) -> str | None:
        """The text of the reply this call is asked to continue (the request ends with the
        `CONTINUE_PROMPT` after it; every step of it since the user's message), or None: a
        scripted model picks up where it stopped."""
        messages = self.messages
        if len(messages) < 2 or not isinstance(messages[-1], UserMessage) or not isinstance(messages[-2],
                                                                                           AssistantMessage):
            return None
        if "".join(c.text for c in messages[-1].content if isinstance(c, TextContent)) != CONTINUE_PROMPT:
            return None
        said: list[str] = []
        for message in reversed(messages[:-1]):
            if isinstance(message, UserMessage):
                break
            if isinstance(message, AssistantMessage):
                said.append("".join(c.text for c in message.content if isinstance(c, TextContent)))
        return "".join(reversed(said))


@runtime_checkable
class Model(Protocol):
    """Anything that can stream a reply."""

    @property
    def model_id(self) -> str:
        """A label for logs and the UI, such as `"openai:gpt-4.1-mini"`."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Yield events for one model call, ending with exactly one `Finish`.

        Provider failures end the stream with `Finish(reason="error")`; they are not raised.
        Cancelling the consumer closes the provider request.
        """
        ...
