"""Text ⇄ frames for the client side, sans-I/O: `encode_client_frame` and `parse_server_frame`.

The mirror image of `codec.py`, for Python clients (`AgentClient`, `think chat`, tests). Client
frames are encoded the way the stock JavaScript client writes them, including the chat request's
body as a JSON string inside JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from pydantic import ValidationError

from think.messages import JSONObject, Message
from think.protocol.codec import InvalidFrame, UnknownFrame, load_object
from think.protocol.frames import (
    ChatClear,
    ChatMessages,
    ChatRecovering,
    ChatRequest,
    ChatRequestCancel,
    ChatResponse,
    ClientFrame,
    ClientMessages,
    ClientToolSchema,
    FileChange,
    Identity,
    McpServers,
    MessageUpdated,
    Outcome,
    ProtocolErrorFrame,
    RpcRequest,
    RpcResponse,
    ServerFrame,
    SetState,
    State,
    StateError,
    StreamPending,
    StreamResumeAck,
    StreamResumeNone,
    StreamResumeRequest,
    StreamResuming,
    ToolApproval,
    ToolResult,
    WorkspaceChanged,
)
from think.protocol.transcript import LazyMessages

# ---- encoding client frames ------------------------------------------------------------------------


def _tool_schemas(tools: tuple[ClientToolSchema, ...]) -> list[JSONObject]:
    out = []
    for t in tools:
        entry: JSONObject = {"name": t.name}
        if t.description:
            entry["description"] = t.description
        if t.parameters is not None:
            entry["parameters"] = t.parameters
        out.append(entry)
    return out


def chat_request_body(frame: ChatRequest) -> str:
    """The `init.body` string of a chat request, as `useAgentChat` builds it."""
    messages = frame.messages.raw if isinstance(frame.messages, LazyMessages) else [m.to_json() for m in frame.messages]
    body: JSONObject = {"messages": messages, "trigger": frame.trigger}
    if frame.client_tools is not None:
        body["clientTools"] = _tool_schemas(frame.client_tools)
    for key, value in frame.body.items():
        if key not in ("messages", "trigger"):
            body[key] = value
    return orjson.dumps(body).decode()


def _client_dict(frame: ClientFrame) -> JSONObject:
    match frame:
        case ChatRequest():
            return {"id": frame.id, "init": {"method": "POST", "body": chat_request_body(frame)},
                    "type": "cf_agent_use_chat_request"}
        case ChatRequestCancel(id=id_):
            return {"id": id_, "type": "cf_agent_chat_request_cancel"}
        case ChatClear():
            return {"type": "cf_agent_chat_clear"}
        case ClientMessages(messages=messages):
            return {"type": "cf_agent_chat_messages", "messages": list(messages)}
        case ToolResult():
            out: JSONObject = {"type": "cf_agent_tool_result", "toolCallId": frame.tool_call_id,
                               "toolName": frame.tool_name, "output": frame.output}
            if frame.state is not None:
                out["state"] = frame.state
            if frame.error_text is not None:
                out["errorText"] = frame.error_text
            if frame.auto_continue is not None:
                out["autoContinue"] = frame.auto_continue
            if frame.client_tools is not None:
                out["clientTools"] = _tool_schemas(frame.client_tools)
            return out
        case ToolApproval():
            out = {"type": "cf_agent_tool_approval", "toolCallId": frame.tool_call_id, "approved": frame.approved}
            if frame.auto_continue is not None:
                out["autoContinue"] = frame.auto_continue
            return out
        case StreamResumeRequest(probe_id=probe):
            return {"type": "cf_agent_stream_resume_request"} | ({"probeId": probe} if probe is not None else {})
        case StreamResumeAck(id=id_):
            return {"type": "cf_agent_stream_resume_ack", "id": id_}
        case SetState(state=state):
            return {"type": "cf_agent_state", "state": state}
        case RpcRequest(id=id_, method=method, args=args):
            return {"type": "rpc", "id": id_, "method": method, "args": list(args)}
    raise TypeError(f"not a client frame: {frame!r}")


def encode_client_frame(frame: ClientFrame) -> str:
    """A client frame as the text of one WebSocket message."""
    return orjson.dumps(_client_dict(frame)).decode()


# ---- parsing server frames -------------------------------------------------------------------------


class _Fields:
    """Typed access to a server frame's fields; a wrong type is an `InvalidFrame`."""

    def __init__(self, data: JSONObject) -> None:
        self.data = data
        self.kind: str = data["type"]

    def _bad(self, key: str, expected: str) -> InvalidFrame:
        frame_id = self.data.get("id")
        return InvalidFrame(f"{self.kind}: {key} must be {expected}", frame_type=self.kind,
                            frame_id=frame_id if isinstance(frame_id, str) else None)

    def text(self, key: str) -> str:
        value = self.data.get(key)
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def opt_text(self, key: str) -> str | None:
        value = self.data.get(key)
        return value if isinstance(value, str) else None

    def object(self, key: str) -> JSONObject:
        value = self.data.get(key)
        return value if isinstance(value, dict) else {}

    def flag(self, key: str) -> bool:
        return self.data.get(key) is True

    def array(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if not isinstance(value, list):
            raise self._bad(key, "an array")
        return value


def _response(f: _Fields) -> ChatResponse:
    seq = f.data.get("seq")
    ids = f.data.get("messageIds")
    outcome = f.data.get("outcome")
    return ChatResponse(
        id=f.text("id"), body=f.opt_text("body") or "",
        done=f.flag("done"), seq=seq if isinstance(seq, int) else None, error=f.flag("error"),
        outcome=outcome if outcome in ("completed", "aborted", "error") else None,
        message_ids=tuple(i for i in ids if isinstance(i, str)) if isinstance(ids, list) else None,
        continuation=f.flag("continuation"), replay=f.flag("replay"), replay_complete=f.flag("replayComplete"))


def _messages(f: _Fields) -> ChatMessages:
    return ChatMessages(LazyMessages(f.array("messages")), connect=f.flag("connect"))


def _message_updated(f: _Fields) -> MessageUpdated:
    try:
        return MessageUpdated(Message.model_validate(f.data.get("message")))
    except ValidationError as exc:
        raise InvalidFrame(f"{f.kind}: the message is not valid", frame_type=f.kind) from exc


def _rpc(f: _Fields) -> RpcResponse:
    if f.data.get("success") is True:
        return RpcResponse(id=f.text("id"), success=True, result=f.data.get("result"),
                           done=f.data.get("done") is not False)
    error = f.data.get("error")
    return RpcResponse(id=f.text("id"), success=False, error=error if isinstance(error, str) else str(error))


_CHANGE_KINDS = ("create", "update", "delete")
_ENTRY_TYPES = ("file", "directory")


def _workspace_changed(f: _Fields) -> WorkspaceChanged:
    changes = []
    for index, entry in enumerate(f.array("changes")):
        kind = entry.get("kind") if isinstance(entry, dict) else None
        path = entry.get("path") if isinstance(entry, dict) else None
        entry_type = entry.get("entryType") if isinstance(entry, dict) else None
        if kind not in _CHANGE_KINDS or not isinstance(path, str) or entry_type not in _ENTRY_TYPES:
            raise InvalidFrame(f"{f.kind}: changes[{index}] must be {{kind: create|update|delete, path: string, "
                               "entryType: file|directory}", frame_type=f.kind)
        changes.append(FileChange(kind, path, entry_type))
    return WorkspaceChanged(tuple(changes))


_SERVER_PARSERS: dict[str, Callable[[_Fields], ServerFrame]] = {
    "cf_agent_use_chat_response": _response,
    "cf_agent_chat_messages": _messages,
    "cf_agent_chat_clear": lambda f: ChatClear(),
    "cf_agent_message_updated": _message_updated,
    "cf_agent_identity": lambda f: Identity(f.text("name"), f.text("agent")),
    "cf_agent_state": lambda f: State(f.data.get("state")),
    "cf_agent_state_error": lambda f: StateError(f.opt_text("error") or ""),
    "cf_agent_mcp_servers": lambda f: McpServers(f.object("mcp")),
    "cf_agent_stream_resuming": lambda f: StreamResuming(f.text("id"), f.opt_text("probeId")),
    "cf_agent_stream_resume_none": lambda f: StreamResumeNone(f.opt_text("reason"), f.opt_text("probeId")),
    "cf_agent_stream_pending": lambda f: StreamPending(f.opt_text("id"), f.opt_text("probeId")),
    "cf_agent_chat_recovering": lambda f: ChatRecovering(f.flag("recovering"), f.opt_text("id")),
    "cf_agent_protocol_error": lambda f: ProtocolErrorFrame(f.opt_text("error") or ""),
    "rpc": _rpc,
    "think_workspace_change": _workspace_changed,
}


def parse_server_frame(text: str | bytes) -> ServerFrame:
    """Turn one WebSocket message from a server into a typed frame.

    Raises `UnknownFrame` for text that is not a frame we know (other frame types, such as
    `agent-tool-event`, are for applications to handle) and `InvalidFrame` for wrong fields.
    """
    data = load_object(text)
    parser = _SERVER_PARSERS.get(data["type"])
    if parser is None:
        raise UnknownFrame(f"unknown frame type {data['type'][:100]!r}")
    return parser(_Fields(data))


def outcome_of(frame: ChatResponse) -> Outcome | None:
    """How a final response frame ended the turn (an error frame without outcome is an error)."""
    if not frame.done:
        return None
    if frame.outcome is not None:
        return frame.outcome
    return "error" if frame.error else "completed"
