"""Fold UI message chunks into the assistant `Message` being built (the server-side fold).

This is deliberately tolerant, like Think's own accumulator: deltas append to the last part of
their kind, a `tool-input-start` for a call that already has a part is ignored, and settled tool
parts never regress. Replaying a stream from its first chunk onto a message that already holds
it therefore does not duplicate text: `start` with the same message id resets the parts first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from think.messages import (
    SETTLED_TOOL_STATES,
    DataPart,
    FilePart,
    JSONObject,
    Message,
    ReasoningPart,
    SourceDocumentPart,
    SourceUrlPart,
    StepStartPart,
    TextPart,
    ToolApproval,
    ToolPart,
    ToolState,
)

_APPROVED_OR_SETTLED = SETTLED_TOOL_STATES | {"approval-responded"}


def normalize_input(value: Any) -> dict[str, Any]:
    """Tool input as a plain object: JSON text of an object is parsed; anything else is `{}`."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        import orjson

        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


@dataclass
class Fold:
    """Applies chunks to `message`. Outcomes the host must act on are collected as attributes."""

    message: Message
    continuation: bool = False
    finish_reason: str | None = None
    errors: list[str] = field(default_factory=list)
    """`errorText`s of `error` chunks, in order."""
    cross_message: list[JSONObject] = field(default_factory=list)
    """Tool output chunks whose call is not in this message (it belongs to an earlier one)."""

    def apply(self, chunk: JSONObject) -> None:
        kind = chunk.get("type")
        parts = self.message.parts
        match kind:
            case "text-delta":
                self._last_text(TextPart).text += chunk.get("delta", "")
            case "reasoning-delta":
                part = self._last_text(ReasoningPart)
                part.text += chunk.get("delta", "")
                if meta := chunk.get("providerMetadata"):
                    part.provider_metadata = _merge(part.provider_metadata, meta)
            case "text-start":
                parts.append(TextPart(text="", state="streaming", provider_metadata=chunk.get("providerMetadata")))
            case "reasoning-start":
                parts.append(ReasoningPart(text="", state="streaming",
                                           provider_metadata=chunk.get("providerMetadata")))
            case "text-end" | "reasoning-end":
                cls = TextPart if kind == "text-end" else ReasoningPart
                for p in reversed(parts):
                    if isinstance(p, cls):
                        p.state = "done"
                        if (meta := chunk.get("providerMetadata")) and isinstance(p, ReasoningPart):
                            p.provider_metadata = _merge(p.provider_metadata, meta)
                        break
            case "start-step" | "step-start":
                parts.append(StepStartPart())
            case "tool-input-start":
                if self._tool(chunk.get("toolCallId")) is None:
                    parts.append(self._new_tool_part(chunk, "input-streaming"))
            case "tool-input-delta":
                pass  # the full input arrives with tool-input-available
            case "tool-input-available":
                part = self._tool(chunk.get("toolCallId"))
                if part is None:
                    part = self._new_tool_part(chunk, "input-available")
                    parts.append(part)
                elif part.state != "input-streaming":
                    return
                part.state = "input-available"
                part.input = normalize_input(chunk.get("input"))
                self._copy_call_fields(part, chunk)
            case "tool-input-error":
                part = self._tool(chunk.get("toolCallId"))
                if part is None:
                    part = self._new_tool_part(chunk, "output-error")
                    parts.append(part)
                elif part.state in _APPROVED_OR_SETTLED:
                    return
                part.state = "output-error"
                part.error_text = chunk.get("errorText", "")
                # ai 7.0.173 keeps the failed input in `input` (`rawInput` is deprecated).
                part.input = chunk.get("input")
                part.raw_input = None
                self._copy_call_fields(part, chunk)
            case "tool-approval-request":
                part = self._tool(chunk.get("toolCallId"))
                if part is not None and part.state not in _APPROVED_OR_SETTLED:
                    part.state = "approval-requested"
                    part.approval = ToolApproval(id=chunk.get("approvalId", ""),
                                                 is_automatic=chunk.get("isAutomatic"),
                                                 signature=chunk.get("signature"))
                    if isinstance(chunk.get("approvalDescriptor"), dict):  # an action's: what is asked (as ai does)
                        part.approval.descriptor = chunk["approvalDescriptor"]  # type: ignore[attr-defined]
            case "tool-output-available" | "tool-output-error":
                part = self._tool(chunk.get("toolCallId"))
                if part is None:
                    self.cross_message.append(chunk)
                    return
                apply_tool_output(part, chunk)
            case "tool-output-denied":
                part = self._tool(chunk.get("toolCallId"))
                if part is not None and part.state not in SETTLED_TOOL_STATES:
                    part.state = "output-denied"
            case "file":
                parts.append(FilePart(media_type=chunk.get("mediaType", ""), url=chunk.get("url", ""),
                                      provider_metadata=chunk.get("providerMetadata")))
            case "source-url":
                parts.append(SourceUrlPart(source_id=chunk.get("sourceId", ""), url=chunk.get("url", ""),
                                           title=chunk.get("title"),
                                           provider_metadata=chunk.get("providerMetadata")))
            case "source-document":
                parts.append(SourceDocumentPart(source_id=chunk.get("sourceId", ""),
                                                media_type=chunk.get("mediaType", ""),
                                                title=chunk.get("title", ""), filename=chunk.get("filename"),
                                                provider_metadata=chunk.get("providerMetadata")))
            case "start":
                message_id = chunk.get("messageId")
                if message_id and not self.continuation:
                    if message_id == self.message.id:
                        parts.clear()  # a replay from the first chunk rebuilds the message
                    self.message.id = message_id
                self._merge_metadata(chunk.get("messageMetadata"))
            case "finish":
                self.finish_reason = chunk.get("finishReason", self.finish_reason)
                self._merge_metadata(chunk.get("messageMetadata"))
            case "message-metadata":
                self._merge_metadata(chunk.get("messageMetadata"))
            case "error":
                self.errors.append(str(chunk.get("errorText", "")))
            case str() if kind.startswith("data-"):
                if chunk.get("transient"):
                    return
                data_id = chunk.get("id")
                for p in parts:
                    if isinstance(p, DataPart) and p.type == kind and data_id is not None and p.id == data_id:
                        p.data = chunk.get("data")
                        return
                parts.append(DataPart(type=kind, id=data_id, data=chunk.get("data")))
            case _:
                pass  # finish-step, abort, custom, reasoning-file, tool-approval-response: not persisted

    # ---- helpers ---------------------------------------------------------------------------

    def _last_text(self, cls: type[TextPart] | type[ReasoningPart]) -> Any:
        for p in reversed(self.message.parts):
            if isinstance(p, cls):
                if p.state != "done":
                    return p
                break
        part = cls(text="", state="streaming")
        self.message.parts.append(part)
        return part

    def _tool(self, call_id: Any) -> ToolPart | None:
        for p in self.message.parts:
            if isinstance(p, ToolPart) and p.tool_call_id == call_id:
                return p
        return None

    @staticmethod
    def _new_tool_part(chunk: JSONObject, state: ToolState) -> ToolPart:
        name = str(chunk.get("toolName", ""))
        dynamic = bool(chunk.get("dynamic"))
        part = ToolPart(type="dynamic-tool" if dynamic else f"tool-{name}",
                        tool_call_id=str(chunk.get("toolCallId", "")), tool_name=name,
                        state=state)
        Fold._copy_call_fields(part, chunk)
        return part

    @staticmethod
    def _copy_call_fields(part: ToolPart, chunk: JSONObject) -> None:
        if "providerExecuted" in chunk:
            part.provider_executed = chunk["providerExecuted"]
        if meta := chunk.get("providerMetadata"):
            part.call_provider_metadata = meta
        if title := chunk.get("title"):
            part.title = title
        if "toolMetadata" in chunk:
            part.tool_metadata = chunk["toolMetadata"]

    def _merge_metadata(self, metadata: Any) -> None:
        if metadata is None:
            return
        if isinstance(self.message.metadata, dict) and isinstance(metadata, dict):
            self.message.metadata = {**self.message.metadata, **metadata}
        else:
            self.message.metadata = metadata


def apply_tool_output(part: ToolPart, chunk: JSONObject) -> bool:
    """Write a `tool-output-*` chunk into `part`; False when the part was already settled."""
    if part.state in SETTLED_TOOL_STATES and not (part.state == "output-available" and part.preliminary):
        return False
    if chunk.get("type") == "tool-output-error":
        part.state = "output-error"
        part.error_text = chunk.get("errorText", "")
    else:
        part.state = "output-available"
        part.output = chunk.get("output")
        part.preliminary = True if chunk.get("preliminary") else None
        if meta := chunk.get("providerMetadata"):
            part.result_provider_metadata = meta
    if "providerExecuted" in chunk:
        part.provider_executed = chunk["providerExecuted"]
    return True


def _merge(old: JSONObject | None, new: JSONObject) -> JSONObject:
    if not old:
        return dict(new)
    merged = dict(old)
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged
