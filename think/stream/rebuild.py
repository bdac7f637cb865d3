"""The UI message chunks that rebuild a stored assistant message, for a client that joins late.

A replay usually sends a stream's own chunks: its `start` names the message, and the client
rebuilds that message from the first chunk on. A recovery continuation's stream holds only what
it adds to a stored partial, so a client that joins while it streams (or after it was cut off)
would see the continuation as a message of its own. Its replay therefore starts with the stored
message as chunks (`message_chunks`), under a `start` that names it, and goes on with the
continuation's chunks: the client rebuilds the one message, the partial and what follows.
"""

from __future__ import annotations

from think.messages import (
    DataPart,
    FilePart,
    JSONObject,
    Message,
    ReasoningPart,
    SourceDocumentPart,
    SourceUrlPart,
    StepStartPart,
    TextPart,
    ToolPart,
)


def message_chunks(message: Message) -> list[JSONObject]:
    """`start` (with the message's id), then chunks that rebuild each of its parts in order."""
    out: list[JSONObject] = [{"type": "start", "messageId": message.id}]
    for index, part in enumerate(message.parts):
        out.extend(_part_chunks(part, f"{message.id}:{index}"))
    return out


def _part_chunks(part: object, block: str) -> list[JSONObject]:
    if isinstance(part, StepStartPart):
        return [{"type": "start-step"}]
    if isinstance(part, TextPart | ReasoningPart):
        kind = "text" if isinstance(part, TextPart) else "reasoning"
        chunks: list[JSONObject] = [{"type": f"{kind}-start", "id": block},
                                    {"type": f"{kind}-delta", "id": block, "delta": part.text}]
        if part.state != "streaming":
            chunks.append({"type": f"{kind}-end", "id": block})
        return chunks
    if isinstance(part, ToolPart):
        return _tool_chunks(part)
    if isinstance(part, DataPart):
        data: JSONObject = {"type": part.type, "data": part.data}
        if part.id is not None:
            data["id"] = part.id
        return [data]
    if isinstance(part, FilePart):
        return [{"type": "file", "mediaType": part.media_type, "url": part.url}]
    if isinstance(part, SourceUrlPart):
        source: JSONObject = {"type": "source-url", "sourceId": part.source_id, "url": part.url}
        if part.title is not None:
            source["title"] = part.title
        return [source]
    if isinstance(part, SourceDocumentPart):
        document: JSONObject = {"type": "source-document", "sourceId": part.source_id,
                                "mediaType": part.media_type, "title": part.title}
        if part.filename is not None:
            document["filename"] = part.filename
        return [document]
    return []  # reasoning files and custom parts are not rebuilt from chunks


def _tool_chunks(part: ToolPart) -> list[JSONObject]:
    call: JSONObject = {"toolCallId": part.tool_call_id, "toolName": part.name}
    if part.type == "dynamic-tool":
        call["dynamic"] = True
    if part.provider_executed is not None:
        call["providerExecuted"] = part.provider_executed
    if part.title is not None:
        call["title"] = part.title
    if part.state == "input-streaming":
        return [{"type": "tool-input-start", **call}]
    chunks: list[JSONObject] = [{"type": "tool-input-available", **call, "input": part.input}]
    ref = {"toolCallId": part.tool_call_id}
    if part.state == "approval-requested" and part.approval is not None:
        chunks.append({"type": "tool-approval-request", "approvalId": part.approval.id, **ref})
    elif part.state == "output-available":
        chunks.append({"type": "tool-output-available", **ref, "output": part.output,
                       **({"preliminary": True} if part.preliminary else {})})
    elif part.state == "output-error":
        chunks.append({"type": "tool-output-error", **ref, "errorText": part.error_text or ""})
    elif part.state == "output-denied":
        chunks.append({"type": "tool-output-denied", **ref})
    return chunks
