"""Text ⇄ frames for the server side, sans-I/O: `parse_frame(text)` and `encode_frame(frame)`.

Client text is untrusted: it is validated with pydantic (strict types) into the values of
`frames.py`; the messages of a chat request are checked up front for `id` and `role` and
validated in full when read (see `transcript.py`). The original's parsing rules hold: text that
is not JSON, has no string `type`, or has a type we do not know is *not a protocol frame*
(`UnknownFrame`; the original hands such text to the user's `onMessage`); a known type with wrong
fields is an `InvalidFrame`, which carries the frame's type and, when it could be read, its `id`
so the caller can answer it.

Nested values are held to one depth limit as they are parsed (`limits.py`): a state, each RPC
argument, a tool result's output, each client tool schema and a chat request's custom body here,
each message of a chat request's transcript when it is read. Deeper input is an `InvalidFrame`
whose text names the limit.

Server frames are encoded with orjson, in the key order the current TypeScript server uses
(`wire-observations.md`), so captured frames and ours compare byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from think._gc import paused_collector
from think.errors import ProtocolError
from think.messages import JSONObject
from think.protocol.frames import (
    SUBMIT,
    ChatClear,
    ChatMessages,
    ChatRecovering,
    ChatRequest,
    ChatRequestCancel,
    ChatResponse,
    ClientFrame,
    ClientMessages,
    ClientToolSchema,
    Identity,
    McpServers,
    MessageUpdated,
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
from think.protocol.limits import IN_PART, TooDeep, check_depth
from think.protocol.transcript import LazyMessages

MAX_ID_LENGTH = 512


class UnknownFrame(ProtocolError):
    """Text that is not a protocol frame: not JSON, no `type`, or a type we do not know."""


class InvalidFrame(ProtocolError):
    """A frame of a known type whose fields are wrong.

    `frame_id` is the frame's `id` when it was a readable string (a chat request or an RPC call
    can then be answered with an error response of its own).
    """

    def __init__(self, message: str, *, frame_type: str, frame_id: str | None = None) -> None:
        super().__init__(message)
        self.frame_type = frame_type
        self.frame_id = frame_id


# ---- parsing client frames -----------------------------------------------------------------------

Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]


class _Wire(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, alias_generator=to_camel,
                              populate_by_name=True)


class _ClientTool(_Wire):
    name: Annotated[str, Field(min_length=1)]
    description: str | None = None
    parameters: JSONObject | None = None

    def value(self) -> ClientToolSchema:
        return ClientToolSchema(name=self.name, description=self.description or "", parameters=self.parameters)


class _Init(_Wire):
    model_config = ConfigDict(extra="ignore", frozen=True)  # RequestInit may carry anything else
    method: str | None = None
    body: str | None = None


class _ChatRequest(_Wire):
    id: Id
    init: _Init = _Init()


class _Cancel(_Wire):
    id: Id


class _ClientMessages(_Wire):
    messages: list[Any] = []


class _ToolResult(_Wire):
    tool_call_id: Id
    tool_name: str = ""
    output: Any = None
    state: Literal["output-available", "output-error"] | None = None
    error_text: str | None = None
    auto_continue: bool | None = None
    client_tools: list[_ClientTool] | None = None


class _ToolApproval(_Wire):
    tool_call_id: Id
    approved: bool
    auto_continue: bool | None = None


class _ResumeAck(_Wire):
    id: Id


class _SetState(_Wire):
    state: Any


class _Rpc(_Wire):
    id: Id
    method: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]
    args: list[Any] = []


def _describe(error: ValidationError, *, prefix: str | None = None) -> str:
    """The first error as `path: message` (with `prefix`, the path is appended to it as is)."""
    first = error.errors(include_url=False)[0]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
    if prefix is None:
        where = where.lstrip(".")
    return f"{where}: {first['msg']}" if where or prefix is not None else str(first["msg"])


_ROLES = ("system", "user", "assistant")
_ROLE_SET = frozenset(_ROLES)
_CLIENT_TOOLS: TypeAdapter[list[_ClientTool]] = TypeAdapter(list[_ClientTool])


def _chat_request(data: JSONObject) -> ChatRequest:
    wire = _ChatRequest.model_validate(data)

    def invalid(reason: str) -> InvalidFrame:
        return InvalidFrame(reason, frame_type="cf_agent_use_chat_request", frame_id=wire.id)

    if wire.init.method != "POST":
        raise invalid(f"init.method must be \"POST\", not {wire.init.method!r}")
    if not wire.init.body:
        raise invalid("init.body must be a non-empty JSON string")
    try:
        body = _loads(wire.init.body)
    except orjson.JSONDecodeError as exc:
        raise invalid(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise invalid("the request body must be a JSON object")
    messages = body.pop("messages", None)
    if not isinstance(messages, list):
        raise invalid("the request body has no \"messages\" array")
    # Only the envelope is checked here: the server reads just the messages it does not have
    # yet, and each is validated in full when it is read (see LazyMessages).
    envelope = _envelope(messages)
    if envelope is None:
        for index, message in enumerate(messages):  # something is wrong: say what, and where
            if not isinstance(message, dict):
                raise invalid(f"messages[{index}] must be an object")
            message_id = message.get("id")
            if not isinstance(message_id, str) or not 0 < len(message_id) <= MAX_ID_LENGTH:
                raise invalid(f"messages[{index}].id must be a string of 1 to {MAX_ID_LENGTH} characters")
            if message.get("role") not in _ROLES:
                raise invalid(f"messages[{index}].role must be one of {', '.join(_ROLES)}")
    trigger = body.pop("trigger", SUBMIT)
    tools = body.pop("clientTools", None)
    try:
        client_tools = None if tools is None else _client_tools(tools, _CLIENT_TOOLS.validate_python(tools))
        check_depth(body, "the request body")
    except ValidationError as exc:
        raise invalid(f"clientTools{_describe(exc, prefix='')}") from exc
    except TooDeep as exc:
        raise invalid(str(exc)) from None
    return ChatRequest(id=wire.id, messages=LazyMessages(messages, from_client=True, envelope=envelope),
                       trigger=trigger if isinstance(trigger, str) else SUBMIT, client_tools=client_tools, body=body)


def _envelope(messages: list[Any]) -> tuple[list[str], list[str]] | None:
    """The ids and roles of a request's messages when every one is an object with a valid `id`
    and `role`; None otherwise. Built-in passes only: a transcript can be long."""
    try:
        ids: list[Any] = list(map(dict.get, messages, repeat("id")))
        roles: list[Any] = list(map(dict.get, messages, repeat("role")))
        if not set(roles) <= _ROLE_SET or not set(map(type, ids)) <= {str}:
            return None
    except TypeError:  # a message that is not an object, or a role that is not hashable
        return None
    if ids and not (min(map(len, ids)) > 0 and max(map(len, ids)) <= MAX_ID_LENGTH):
        return None
    return ids, roles


def _client_tools(raw: list[Any], tools: list[_ClientTool]) -> tuple[ClientToolSchema, ...]:
    """Validated client tool schemas, each within the depth limit (`raw` is their JSON)."""
    for index, entry in enumerate(raw):
        check_depth(entry, f"clientTools[{index}]")
    return tuple(t.value() for t in tools)


def _tool_result(data: JSONObject) -> ToolResult:
    w = _ToolResult.model_validate(data)
    check_depth(w.output, "output", at=IN_PART)  # it becomes a field of a tool part
    tools = None if w.client_tools is None else _client_tools(data["clientTools"], w.client_tools)
    return ToolResult(tool_call_id=w.tool_call_id, tool_name=w.tool_name, output=w.output, state=w.state,
                      error_text=w.error_text, auto_continue=w.auto_continue, client_tools=tools)


def _tool_approval(data: JSONObject) -> ToolApproval:
    w = _ToolApproval.model_validate(data)
    return ToolApproval(tool_call_id=w.tool_call_id, approved=w.approved, auto_continue=w.auto_continue)


def _rpc(data: JSONObject) -> RpcRequest:
    w = _Rpc.model_validate(data)
    for index, arg in enumerate(w.args):
        check_depth(arg, f"args[{index}]")
    return RpcRequest(id=w.id, method=w.method, args=tuple(w.args))


def _set_state(data: JSONObject) -> SetState:
    state = _SetState.model_validate(data).state
    check_depth(state, "state")
    return SetState(state)


def _resume_request(data: JSONObject) -> StreamResumeRequest:
    probe = data.get("probeId")
    return StreamResumeRequest(probe if isinstance(probe, str) else None)  # kept only if a string


_CLIENT_PARSERS: dict[str, Callable[[JSONObject], ClientFrame]] = {
    "cf_agent_use_chat_request": _chat_request,
    "cf_agent_chat_request_cancel": lambda d: ChatRequestCancel(_Cancel.model_validate(d).id),
    "cf_agent_chat_clear": lambda d: ChatClear(),
    "cf_agent_chat_messages": lambda d: ClientMessages(tuple(_ClientMessages.model_validate(d).messages)),
    "cf_agent_tool_result": _tool_result,
    "cf_agent_tool_approval": _tool_approval,
    "cf_agent_stream_resume_request": _resume_request,
    "cf_agent_stream_resume_ack": lambda d: StreamResumeAck(_ResumeAck.model_validate(d).id),
    "cf_agent_state": _set_state,
    "rpc": _rpc,
}


LARGE_FRAME = 16 * 1024
"""Frames from this size on are parsed with the cyclic garbage collector paused."""


def _loads(text: str | bytes) -> Any:
    if len(text) < LARGE_FRAME:
        return orjson.loads(text)
    with paused_collector():  # a long transcript parses into ~10 objects a message
        return orjson.loads(text)


def load_object(text: str | bytes) -> JSONObject:
    """The JSON object of a frame with a string `type`; `UnknownFrame` otherwise."""
    try:
        data = _loads(text)
    except orjson.JSONDecodeError:
        raise UnknownFrame("the frame is not JSON") from None
    if not isinstance(data, dict):
        raise UnknownFrame(f"the frame is a JSON {type(data).__name__}, not an object")
    if not isinstance(data.get("type"), str):
        raise UnknownFrame("the frame has no string \"type\"")
    return data


def parse_frame(text: str | bytes) -> ClientFrame:
    """Turn one WebSocket text message from a client into a typed frame.

    Raises `UnknownFrame` for text that is not a protocol frame and `InvalidFrame` for a known
    frame type with wrong fields (both are `ProtocolError`s). Never raises anything else.
    """
    data = load_object(text)
    kind = data["type"]
    parser = _CLIENT_PARSERS.get(kind)
    if parser is None:
        raise UnknownFrame(f"unknown frame type {kind[:100]!r}")
    try:
        return parser(data)
    except (ValidationError, TooDeep) as exc:
        frame_id = data.get("id")
        readable = isinstance(frame_id, str) and 0 < len(frame_id) <= MAX_ID_LENGTH
        reason = _describe(exc) if isinstance(exc, ValidationError) else str(exc)
        raise InvalidFrame(f"{kind}: {reason}", frame_type=kind, frame_id=frame_id if readable else None) from exc


# ---- encoding server frames ----------------------------------------------------------------------


def _dumps(obj: Any) -> str:
    return orjson.dumps(obj).decode()


def _response(f: ChatResponse) -> JSONObject:
    if f.replay:  # the resume path builds these frames with its own key order
        out: JSONObject = {"body": f.body, "done": f.done, "id": f.id, "type": "cf_agent_use_chat_response",
                           "replay": True}
        if f.replay_complete:
            out["replayComplete"] = True
        if f.outcome is not None:  # an interrupted stream's closing frame: outcome "aborted"
            out["outcome"] = f.outcome
    else:
        out = {"type": "cf_agent_use_chat_response", "id": f.id, "body": f.body, "done": f.done}
        if f.error:
            out["error"] = True
        if f.outcome is not None:
            out["outcome"] = f.outcome
    if f.seq is not None:
        out["seq"] = f.seq
    if f.message_ids is not None:
        out["messageIds"] = list(f.message_ids)
    if f.continuation:
        out["continuation"] = True
    return out


def _optional(out: JSONObject, **fields: Any) -> JSONObject:
    for key, value in fields.items():
        if value is not None:
            out[key] = value
    return out


def _server_dict(frame: ServerFrame) -> JSONObject:
    match frame:
        case ChatResponse():
            return _response(frame)
        case ChatClear():
            return {"type": "cf_agent_chat_clear"}
        case MessageUpdated(message=message):
            return {"type": "cf_agent_message_updated", "message": message.to_json()}
        case Identity(name=name, agent=agent):
            return {"type": "cf_agent_identity", "name": name, "agent": agent}
        case State(state=state):
            return {"state": state, "type": "cf_agent_state"}
        case StateError(error=error):
            return {"type": "cf_agent_state_error", "error": error}
        case McpServers(mcp=mcp):
            return {"mcp": mcp, "type": "cf_agent_mcp_servers"}
        case StreamResuming(id=id_, probe_id=probe):
            return _optional({"type": "cf_agent_stream_resuming", "id": id_}, probeId=probe)
        case StreamResumeNone(reason=reason, probe_id=probe):
            return _optional({"type": "cf_agent_stream_resume_none"}, reason=reason, probeId=probe)
        case StreamPending(id=id_, probe_id=probe):
            return _optional({"type": "cf_agent_stream_pending"}, id=id_, probeId=probe)
        case ChatRecovering(recovering=recovering, id=id_):
            return _optional({"type": "cf_agent_chat_recovering", "recovering": recovering}, id=id_)
        case RpcResponse(id=id_, success=True, result=result, done=done):
            return {"type": "rpc", "id": id_, "success": True, "result": result, "done": done}
        case RpcResponse(id=id_, error=error):
            return {"type": "rpc", "id": id_, "success": False, "error": error or "RPC failed"}
        case ProtocolErrorFrame(error=error):
            return {"type": "cf_agent_protocol_error", "error": error}
        case WorkspaceChanged(changes=changes):
            return {"type": "think_workspace_change",
                    "changes": [{"kind": c.kind, "path": c.path, "entryType": c.entry_type} for c in changes]}
    raise TypeError(f"not a server frame: {frame!r}")  # ChatMessages goes through encode_transcript


def encode_frame(frame: ServerFrame) -> str:
    """A server frame as the text of one WebSocket message.

    Raises TypeError when a value inside (an RPC result, a state) is not JSON-serializable.
    """
    if isinstance(frame, ChatMessages):
        return encode_transcript([m.dumps() for m in frame.messages], connect=frame.connect)
    return _dumps(_server_dict(frame))


def encode_transcript(message_json: Iterable[bytes], *, connect: bool = False) -> str:
    """`cf_agent_chat_messages` from messages already encoded as JSON (what storage holds).

    The transcript can be long: splicing stored JSON avoids re-serializing every message.
    """
    tail = b'],"connect":true}' if connect else b"]}"
    return (b'{"type":"cf_agent_chat_messages","messages":[' + b",".join(message_json) + tail).decode()


def encode_message_list(message_json: Iterable[bytes]) -> bytes:
    """A JSON array of messages already encoded as JSON (the body of `get-messages`)."""
    return b"[" + b",".join(message_json) + b"]"
