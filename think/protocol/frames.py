"""Every frame of the `cf_agent_*` WebSocket protocol, as typed values.

Client frames (browser → server) are what `parse_frame` returns after validation; server frames
(server → browser) are what `encode_frame` turns into text. Field names are Python's; the wire
names (`toolCallId`, `probeId`, `messageIds`…) live only in `codec.py`.

The chat request is a JSON string inside JSON on the wire; here it is already unpacked into
`messages`, `trigger`, `client_tools` and the remaining custom `body`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from think.messages import JSONObject, JSONValue, Message

Outcome = Literal["completed", "aborted", "error"]
REGENERATE = "regenerate-message"
SUBMIT = "submit-message"

EMPTY_MCP: JSONObject = {"prompts": [], "resources": [], "servers": {}, "tools": []}
"""The `mcp` payload of an agent without MCP servers."""


# ---- client → server ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientToolSchema:
    """A tool the browser executes itself, offered with a chat request (`clientTools`)."""

    name: str
    description: str = ""
    parameters: JSONObject | None = None
    """JSON Schema of the tool's input."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """`cf_agent_use_chat_request`: run a turn over the client's transcript."""

    id: str
    """Chosen by the client (an 8-character nanoid in the stock client); the turn's request id."""
    messages: Sequence[Message] = ()
    """The client's whole transcript. `parse_frame` checks every message's `id` and `role` and
    returns a `LazyMessages`: each message is validated in full when it is first read (a bad one
    raises `InvalidMessage` then), so a server reads only the messages it does not have."""
    trigger: str = SUBMIT
    """`submit-message` or `regenerate-message`; anything else counts as a submit."""
    client_tools: tuple[ClientToolSchema, ...] | None = None
    """None when the body had no `clientTools` key."""
    body: JSONObject = field(default_factory=dict)
    """Every other key of the request body (the "custom body")."""

    @property
    def is_regeneration(self) -> bool:
        return self.trigger == REGENERATE


@dataclass(frozen=True, slots=True)
class ChatRequestCancel:
    """`cf_agent_chat_request_cancel`: stop the turn with this request id (unknown ids: no-op)."""

    id: str


@dataclass(frozen=True, slots=True)
class ChatClear:
    """`cf_agent_chat_clear`, both ways: C→S clear the history; S→C the history was cleared."""


@dataclass(frozen=True, slots=True)
class ClientMessages:
    """`cf_agent_chat_messages` sent by a client (`syncMessagesToServer`). Think ignores it."""

    messages: tuple[JSONValue, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """`cf_agent_tool_result`: the output of a client-side tool call."""

    tool_call_id: str
    tool_name: str = ""
    output: JSONValue = None
    state: Literal["output-available", "output-error"] | None = None
    error_text: str | None = None
    auto_continue: bool | None = None
    client_tools: tuple[ClientToolSchema, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolApproval:
    """`cf_agent_tool_approval`: a person's answer to an approval request, keyed by tool call id."""

    tool_call_id: str
    approved: bool
    auto_continue: bool | None = None


@dataclass(frozen=True, slots=True)
class StreamResumeRequest:
    """`cf_agent_stream_resume_request`: "is a stream running?" (sent on every open)."""

    probe_id: str | None = None


@dataclass(frozen=True, slots=True)
class StreamResumeAck:
    """`cf_agent_stream_resume_ack`: the client accepts the offered stream; replay it."""

    id: str


@dataclass(frozen=True, slots=True)
class SetState:
    """`cf_agent_state` sent by a client: replace the agent's state."""

    state: JSONValue


@dataclass(frozen=True, slots=True, kw_only=True)
class RpcRequest:
    """`rpc`: call a `@callable` method of the agent."""

    id: str
    method: str
    args: tuple[JSONValue, ...] = ()


ClientFrame: TypeAlias = (
    ChatRequest | ChatRequestCancel | ChatClear | ClientMessages | ToolResult | ToolApproval
    | StreamResumeRequest | StreamResumeAck | SetState | RpcRequest
)


# ---- server → client ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatResponse:
    """`cf_agent_use_chat_response`: one chunk, an error, or the end of a turn's stream.

    * a chunk: `body` is the chunk's JSON text, `seq` counts from 0 per request;
    * an in-band error: `body` is plain text, `error=True`, `done=False`;
    * the end: `body=""`, `done=True`, `outcome` (and `error=True` with the text in `body` for a
      turn that failed before it streamed);
    * replays (answers to a resume ACK) carry `replay=True`, the last one `replay_complete=True`.
    """

    id: str
    body: str = ""
    done: bool = False
    seq: int | None = None
    error: bool = False
    outcome: Outcome | None = None
    message_ids: tuple[str, ...] | None = None
    continuation: bool = False
    replay: bool = False
    replay_complete: bool = False


@dataclass(frozen=True, slots=True)
class ChatMessages:
    """`cf_agent_chat_messages`: the whole transcript; the client replaces its list with it."""

    messages: Sequence[Message]
    connect: bool = False
    """True on the frame sent when a socket connects."""


@dataclass(frozen=True, slots=True)
class MessageUpdated:
    """`cf_agent_message_updated`: one message whose tool part changed."""

    message: Message


@dataclass(frozen=True, slots=True)
class Identity:
    """`cf_agent_identity`: the instance name and the kebab-case class name."""

    name: str
    agent: str


@dataclass(frozen=True, slots=True)
class State:
    """`cf_agent_state`: the agent's state (sent only when it has one)."""

    state: JSONValue


@dataclass(frozen=True, slots=True)
class StateError:
    """`cf_agent_state_error`: a state update from this client was refused."""

    error: str


@dataclass(frozen=True, slots=True)
class McpServers:
    """`cf_agent_mcp_servers`: the agent's MCP servers, tools, prompts and resources."""

    mcp: JSONObject = field(default_factory=lambda: dict(EMPTY_MCP))


@dataclass(frozen=True, slots=True)
class StreamResuming:
    """`cf_agent_stream_resuming`: a stream is running; ACK to get it replayed."""

    id: str
    probe_id: str | None = None


@dataclass(frozen=True, slots=True)
class StreamResumeNone:
    """`cf_agent_stream_resume_none`: nothing to resume (`reason="idle"` is authoritative)."""

    reason: str | None = None
    probe_id: str | None = None


@dataclass(frozen=True, slots=True)
class StreamPending:
    """`cf_agent_stream_pending`: a turn was accepted but has not started streaming yet."""

    id: str | None = None
    probe_id: str | None = None


@dataclass(frozen=True, slots=True)
class ChatRecovering:
    """`cf_agent_chat_recovering`: an advisory hint that an interrupted turn is being recovered."""

    recovering: bool
    id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RpcResponse:
    """`rpc` answer: a result (`done=False` for a streamed chunk) or an error."""

    id: str
    success: bool
    result: Any = None
    done: bool = True
    error: str | None = None


@dataclass(frozen=True, slots=True)
class FileChange:
    """One committed change of a workspace entry: `kind` is `create`, `update` or `delete`.

    A move is a `delete` of the old path and a `create` of the new one; `mkdir` is a `create` of a
    `directory`; removing a directory recursively is one `delete` that covers everything under it.
    """

    kind: Literal["create", "update", "delete"]
    path: str
    entry_type: Literal["file", "directory"]


@dataclass(frozen=True, slots=True)
class WorkspaceChanged:
    """`think_workspace_change` (ours, not the original's): the agent's workspace changed.

    Broadcast to every connection of the agent, whoever made the change (a tool, `bash`, code
    calling `self.workspace`). A burst of changes comes in one frame (up to 500 changes), in order.
    """

    changes: tuple[FileChange, ...]


@dataclass(frozen=True, slots=True)
class ProtocolErrorFrame:
    """`cf_agent_protocol_error` (ours, not the original's): a frame of this client was refused.

    Sent for frames that cannot be answered in their own protocol (a chat request or an RPC
    call with a known id gets its own error response instead).
    """

    error: str


ServerFrame: TypeAlias = (
    ChatResponse | ChatMessages | ChatClear | MessageUpdated | Identity | State | StateError
    | McpServers | StreamResuming | StreamResumeNone | StreamPending | ChatRecovering | RpcResponse
    | ProtocolErrorFrame | WorkspaceChanged
)
