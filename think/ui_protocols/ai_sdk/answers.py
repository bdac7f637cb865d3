"""Tool answers in an AI SDK request: `addToolOutput` and `addToolApprovalResponse`.

`useChat` answers a client tool or an approval by changing the tool part in its copy of the last
assistant message and sending the whole transcript again (`trigger: "submit-message"`, the
`messageId` of that message). Here each part whose client copy answers a call the server still
has not settled becomes the frame a WebSocket tab sends for the same click (`cf_agent_tool_result`,
`cf_agent_tool_approval`, with `autoContinue`), and goes through the same channel: the trust
checks (`think.turns.trust`: only a call a client may answer, only once), the same storage, the
same continuation turn. Nothing else in the client's copy is taken. The reply to the request is
that continuation's stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from think.agent import Think
from think.messages import SETTLED_TOOL_STATES, ToolPart
from think.protocol.codec import InvalidFrame, UnknownFrame, parse_frame
from think.protocol.frames import ChatRequest, ToolApproval, ToolResult
from think.server.agents import AgentHost
from think.turns.tool_results import ANY_TOOL_STATE, find_part
from think.ui_protocols.ai_sdk.stream import ChatStream

_RESULTS = frozenset({"output-available", "output-error"})
_APPROVALS = frozenset({"approval-responded", "output-denied"})


class AnswerRefused(Exception):
    """Every answer in the request was refused (the message says why)."""


@dataclass
class Answers:
    frames: list[dict[str, Any]] = field(default_factory=list)
    """The answers to apply, as wire frames."""
    repeated: bool = False
    """The last message also answers calls the server has settled (a resent request)."""


def answers_in(host: AgentHost, messages: Sequence[Any], request: ChatRequest) -> Answers:
    """The answer frames (as wire dicts) the last message of `messages` carries for calls the
    server has not settled; empty when it carries none (an ordinary request). Whether a client
    may give each answer is the channel's (the trust module's) decision, not this one's."""
    out = Answers()
    if request.is_regeneration or not messages:
        return out
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "assistant" or not isinstance(last.get("parts"), list):
        return out
    agent = host.agent
    assert isinstance(agent, Think)
    history = agent.session.history()
    frames = out.frames
    for part in last["parts"]:
        if not isinstance(part, dict) or not isinstance(call_id := part.get("toolCallId"), str):
            continue
        found = find_part(history, call_id, ANY_TOOL_STATE)
        if found is None:
            continue
        server_part = found[0].parts[found[1]]
        state = part.get("state")
        if not isinstance(server_part, ToolPart) or server_part.state in SETTLED_TOOL_STATES:
            out.repeated = out.repeated or state in _RESULTS | _APPROVALS
            continue  # answered already: the server's copy stands
        if state in _RESULTS:
            frame: dict[str, Any] = {"type": "cf_agent_tool_result", "toolCallId": call_id,
                                     "toolName": _tool_name(part), "output": part.get("output"),
                                     "state": state, "autoContinue": True}
            if isinstance(part.get("errorText"), str):
                frame["errorText"] = part["errorText"]
            if request.client_tools is not None:
                frame["clientTools"] = [{"name": t.name, "description": t.description, "parameters": t.parameters}
                                        for t in request.client_tools]
            frames.append(frame)
        elif state in _APPROVALS:
            approval = part.get("approval")
            approved = approval.get("approved") if isinstance(approval, dict) else None
            if isinstance(approved, bool):
                frames.append({"type": "cf_agent_tool_approval", "toolCallId": call_id, "approved": approved,
                               "autoContinue": True})
    return out


@dataclass
class Applied:
    continuation: str | None
    """The request id of the continuation the answers asked for (None: one is running, this
    one waits behind it)."""
    denied: list[str]
    """Calls denied by these answers: no continuation chunk says so, the response must."""


async def apply_answers(host: AgentHost, stream: ChatStream, frames: list[dict[str, Any]]) -> Applied:
    """Hand the answers to the chat channel as the answering connection. Raises `AnswerRefused`
    when none was taken."""
    chat = host.chat
    assert chat is not None
    agent = host.agent
    assert isinstance(agent, Think)
    refusals: list[str] = []
    for wire in frames:
        try:
            frame = parse_frame(_dumps(wire))
        except (InvalidFrame, UnknownFrame) as exc:
            refusals.append(str(exc))
            continue
        assert isinstance(frame, ToolResult | ToolApproval)
        await chat.receive(stream, frame)
        refusals += [str(f.data.get("error")) for f in stream.take() if f.type == "cf_agent_protocol_error"]
    if len(refusals) == len(frames):
        raise AnswerRefused("; ".join(refusals) or "The tool answers were refused")
    history = agent.session.history()
    denied = []
    for wire in frames:
        found = find_part(history, wire["toolCallId"], frozenset({"output-denied"}))
        if wire["type"] == "cf_agent_tool_approval" and not wire["approved"] and found is not None:
            denied.append(str(wire["toolCallId"]))
    pending = agent.continuations.pending
    if pending is None:
        return Applied(None, denied)
    if pending.owner == stream.id:
        # A tab that asked for a continuation streams it itself, so the resume handshake keeps it
        # from other tabs while that tab is open. An HTTP response is no tab: a reloaded page
        # must be able to resume the continuation at once, whether or not this response has
        # been seen to close yet.
        pending.owner = None
    return Applied(pending.request_id, denied)


def _tool_name(part: dict[str, Any]) -> str:
    name = part.get("toolName")
    if isinstance(name, str):
        return name
    kind = part.get("type")
    return kind[5:] if isinstance(kind, str) and kind.startswith("tool-") else ""


def _dumps(wire: dict[str, Any]) -> str:
    return orjson.dumps(wire).decode()
