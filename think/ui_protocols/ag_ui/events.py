"""`RunEncoder`: the UI message chunks of think turns → AG-UI events, with no I/O.

One encoder serves one AG-UI run (`threadId`, `runId`), which may span the chunks of more than
one turn (an answer and the continuation it asked for). The mapping:

    start {messageId}            the AG-UI assistant message id (text and tool calls hang on it)
    start-step / finish-step     STEP_STARTED / STEP_FINISHED ("step-<n>")
    text-start/-delta/-end       TEXT_MESSAGE_START / _CONTENT / _END (a later text part of the
                                 same message reopens it with a "\n\n" first: `Message.text`)
    reasoning-start/-delta/-end  REASONING_START, REASONING_MESSAGE_START / _CONTENT / _END,
                                 REASONING_END (its own id, `<messageId>/reasoning-<n>`)
    tool-input-start/-delta      TOOL_CALL_START / TOOL_CALL_ARGS (parent: the message)
    tool-input-available         TOOL_CALL_END (START and ARGS first for a call not streamed)
    tool-output-available/-error TOOL_CALL_RESULT (`result-<toolCallId>`); -denied too
    tool-approval-request        nothing: the run ends in an interrupt (read from the transcript)
    data-*, source-*, file       CUSTOM {name: <chunk type>, value: <chunk>}
    finish {messageMetadata.usage}  the run's `usage`
    error / abort                remembered for the end (`failed`, `aborted`)

`close()` ends what is still open (a cut-off text, a call that never got its input) so that
RUN_FINISHED is valid; the caller sends RUN_FINISHED or RUN_ERROR (see `think.ui_protocols.ag_ui.run`).
"""

from __future__ import annotations

from typing import Any

import orjson
from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from think.messages import JSONObject

TEXT_JOIN = "\n\n"
"""What separates two text parts of one message (as `Message.text` joins them)."""


def result_id(tool_call_id: str) -> str:
    """The AG-UI id of the tool message that carries a call's result."""
    return f"result-{tool_call_id}"


def reasoning_id(message_id: str, index: int) -> str:
    """The AG-UI id of a message's `index`-th reasoning part."""
    return f"{message_id}/reasoning-{index}"


def output_text(output: Any) -> str:
    """A tool output as the text of a tool message: strings as they are, anything else as JSON."""
    return output if isinstance(output, str) else orjson.dumps(output).decode()


class RunEncoder:
    """Turns the chunks of one run into AG-UI events (see the module docstring)."""

    def __init__(self) -> None:
        self.message_id: str | None = None
        """The assistant message the events hang on (a continuation's: the one it continues)."""
        self.last_seq = -1
        """The seq of the last buffered chunk replayed through this encoder (live ones after it)."""
        self.error: str | None = None
        """The text of the last `error` chunk, if any."""
        self.aborted = False
        self.usage: list[TokenUsage] = []
        self._step = 0
        self._step_open: str | None = None
        self._text: str | None = None
        self._has_text: set[str] = set()
        self._join_next = False
        self._reasoning: str | None = None
        self._reasoning_count = 0
        self._calls: dict[str, str] = {}
        """Tool calls started and not ended: id → name."""
        self._ended: set[str] = set()

    # ---- one chunk -------------------------------------------------------------------------------

    def feed(self, chunk: JSONObject) -> list[BaseEvent]:
        kind = chunk.get("type")
        out: list[BaseEvent] = []
        match kind:
            case "start":
                message_id = chunk.get("messageId")
                if isinstance(message_id, str) and message_id:
                    self.message_id = message_id
            case "start-step":
                self._close_step(out)
                self._step += 1
                self._step_open = f"step-{self._step}"
                out.append(StepStartedEvent(step_name=self._step_open))
            case "finish-step":
                self._close_text(out)
                self._close_reasoning(out)
                self._close_step(out)
            case "text-start":
                self._open_text(out)
            case "text-delta":
                self._text_delta(str(chunk.get("delta") or ""), out)
            case "text-end":
                self._close_text(out)
            case "reasoning-start":
                self._open_reasoning(out)
            case "reasoning-delta":
                delta = str(chunk.get("delta") or "")
                if delta:
                    self._open_reasoning(out)
                    assert self._reasoning is not None
                    out.append(ReasoningMessageContentEvent(message_id=self._reasoning, delta=delta))
            case "reasoning-end":
                self._close_reasoning(out)
            case "tool-input-start":
                self._start_call(str(chunk.get("toolCallId")), str(chunk.get("toolName") or ""), out)
            case "tool-input-delta":
                call_id = str(chunk.get("toolCallId"))
                delta = str(chunk.get("inputTextDelta") or "")
                if call_id in self._calls and delta:
                    out.append(ToolCallArgsEvent(tool_call_id=call_id, delta=delta))
            case "tool-input-available" | "tool-input-error":
                self._input_ready(chunk, out)
            case "tool-output-available":
                out.extend(self._result(str(chunk.get("toolCallId")), output_text(chunk.get("output"))))
            case "tool-output-error":
                out.extend(self._result(str(chunk.get("toolCallId")), str(chunk.get("errorText") or "error"),
                                        error=True))
            case "tool-output-denied":
                out.extend(self._result(str(chunk.get("toolCallId")), "The tool call was denied", error=True))
            case "finish":
                self._close_text(out)
                self._close_reasoning(out)
                self._usage(chunk)
            case "error":
                self.error = str(chunk.get("errorText") or "The turn failed")
            case "abort":
                self.aborted = True
            case str() if kind.startswith(("data-", "source-")) or kind == "file":
                if not chunk.get("transient") or kind.startswith("data-"):
                    out.append(CustomEvent(name=kind, value=chunk))
            case _:
                pass  # message-metadata, tool-input-delta of an unknown call, …: nothing to say
        return out

    def close(self) -> list[BaseEvent]:
        """End whatever is open: text, reasoning, tool calls, the step."""
        out: list[BaseEvent] = []
        self._close_text(out)
        self._close_reasoning(out)
        for call_id in list(self._calls):
            self._end_call(call_id, out)
        self._close_step(out)
        return out

    # ---- text and reasoning ----------------------------------------------------------------------

    def _parent(self) -> str:
        if self.message_id is None:  # a stream without `start` (never from our turns): name one
            self.message_id = f"message-{self._step}"
        return self.message_id

    def _open_text(self, out: list[BaseEvent]) -> None:
        if self._text is None:
            self._close_reasoning(out)
            self._text = self._parent()
            self._join_next = self._text in self._has_text  # reopened: the parts are joined
            out.append(TextMessageStartEvent(message_id=self._text, role="assistant"))

    def _text_delta(self, delta: str, out: list[BaseEvent]) -> None:
        if not delta:
            return
        self._open_text(out)
        assert self._text is not None
        if self._join_next:
            delta = TEXT_JOIN + delta
            self._join_next = False
        self._has_text.add(self._text)
        out.append(TextMessageContentEvent(message_id=self._text, delta=delta))

    def _close_text(self, out: list[BaseEvent]) -> None:
        if self._text is not None:
            out.append(TextMessageEndEvent(message_id=self._text))
            self._text = None

    def _open_reasoning(self, out: list[BaseEvent]) -> None:
        if self._reasoning is None:
            self._close_text(out)
            self._reasoning = reasoning_id(self._parent(), self._reasoning_count)
            self._reasoning_count += 1
            out.append(ReasoningStartEvent(message_id=self._reasoning))
            out.append(ReasoningMessageStartEvent(message_id=self._reasoning))

    def _close_reasoning(self, out: list[BaseEvent]) -> None:
        if self._reasoning is not None:
            out.append(ReasoningMessageEndEvent(message_id=self._reasoning))
            out.append(ReasoningEndEvent(message_id=self._reasoning))
            self._reasoning = None

    def _close_step(self, out: list[BaseEvent]) -> None:
        if self._step_open is not None:
            out.append(StepFinishedEvent(step_name=self._step_open))
            self._step_open = None

    # ---- tool calls ------------------------------------------------------------------------------

    def _start_call(self, call_id: str, name: str, out: list[BaseEvent]) -> None:
        if call_id in self._calls or call_id in self._ended:
            return
        self._close_text(out)
        self._close_reasoning(out)
        self._calls[call_id] = name
        out.append(ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name, parent_message_id=self._parent()))

    def _input_ready(self, chunk: JSONObject, out: list[BaseEvent]) -> None:
        call_id = str(chunk.get("toolCallId"))
        if call_id in self._ended:
            return
        if call_id not in self._calls:  # not streamed: the whole input at once
            self._start_call(call_id, str(chunk.get("toolName") or ""), out)
            args = output_text(chunk.get("input") if chunk.get("input") is not None else {})
            out.append(ToolCallArgsEvent(tool_call_id=call_id, delta=args))
        self._end_call(call_id, out)

    def _end_call(self, call_id: str, out: list[BaseEvent]) -> None:
        self._calls.pop(call_id, None)
        self._ended.add(call_id)
        out.append(ToolCallEndEvent(tool_call_id=call_id))

    def _result(self, call_id: str, content: str, *, error: bool = False) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if call_id in self._calls:
            self._end_call(call_id, out)
        event = ToolCallResultEvent(message_id=result_id(call_id), tool_call_id=call_id, content=content,
                                    role="tool")
        if error:
            event = event.model_copy(update={"metadata": {"think": {"error": True}}})
        out.append(event)
        return out

    def _usage(self, chunk: JSONObject) -> None:
        metadata = chunk.get("messageMetadata")
        usage = metadata.get("usage") if isinstance(metadata, dict) else None
        if not isinstance(usage, dict):
            return
        counts = {key: usage.get(name) for key, name in (
            ("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"), ("total_tokens", "totalTokens"),
            ("reasoning_tokens", "reasoningTokens"), ("cached_input_tokens", "cachedInputTokens"))}
        model = usage.get("model")
        self.usage.append(TokenUsage(model=model if isinstance(model, str) else None,
                                     **{k: v for k, v in counts.items() if isinstance(v, int) and v >= 0}))
