"""Tool answers in an AI SDK request: `addToolOutput` and `addToolApprovalResponse`.

`useChat` answers a client tool or an approval by changing the tool part in its copy of the last
assistant message and sending the whole transcript again (`trigger: "submit-message"`, the
`messageId` of that message). Here each part whose client copy answers a call the server still
holds open becomes the frame a WebSocket tab sends for the same click (`cf_agent_tool_result`,
`cf_agent_tool_approval`, with `autoContinue`), and goes through the same channel: the trust
checks (`think.turns.trust`: only a call a client may answer, only once), the same storage, the
same continuation turn. Nothing else in the client's copy is taken. The reply to the request is
that continuation's stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from think.agent import Think
from think.messages import ToolPart
from think.protocol.codec import InvalidFrame, UnknownFrame, parse_frame
from think.protocol.frames import ChatRequest, ToolApproval, ToolResult
from think.server.agents import AgentHost
from think.turns.tool_results import ANY_TOOL_STATE, find_part
from think.ui_protocols.ai_sdk.stream import ChatStream

_RESULTS = frozenset({"output-available", "output-error"})
_OPEN_FOR_RESULT = frozenset({"input-available", "approval-responded"})
_OPEN_FOR_APPROVAL = frozenset({"approval-requested"})


class AnswerRefused(Exception):
    """Every answer in the request was refused (the message says why)."""


def answers_in(host: AgentHost, messages: Sequence[Any], request: ChatRequest) -> list[dict[str, Any]]:
    """The answer frames (as wire dicts) the last message of `messages` carries, for calls the
    server holds open; empty when it carries none (an ordinary request)."""
    if request.is_regeneration or not messages:
        return []
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "assistant" or not isinstance(last.get("parts"), list):
        return []
    agent = host.agent
    assert isinstance(agent, Think)
    history = agent.session.history()
    frames: list[dict[str, Any]] = []
    for part in last["parts"]:
        if not isinstance(part, dict) or not isinstance(call_id := part.get("toolCallId"), str):
            continue
        found = find_part(history, call_id, ANY_TOOL_STATE)
        if found is None:
            continue
        server_part = found[0].parts[found[1]]
        server_state = server_part.state if isinstance(server_part, ToolPart) else None
        state = part.get("state")
        if state in _RESULTS and server_state in _OPEN_FOR_RESULT:
            frame: dict[str, Any] = {"type": "cf_agent_tool_result", "toolCallId": call_id,
                                     "toolName": _tool_name(part), "output": part.get("output"),
                                     "state": state, "autoContinue": True}
            if isinstance(part.get("errorText"), str):
                frame["errorText"] = part["errorText"]
            if request.client_tools is not None:
                frame["clientTools"] = [{"name": t.name, "description": t.description, "parameters": t.parameters}
                                        for t in request.client_tools]
            frames.append(frame)
        elif state in ("approval-responded", "output-denied") and server_state in _OPEN_FOR_APPROVAL:
            approval = part.get("approval")
            approved = approval.get("approved") if isinstance(approval, dict) else None
            if isinstance(approved, bool):
                frames.append({"type": "cf_agent_tool_approval", "toolCallId": call_id, "approved": approved,
                               "autoContinue": True})
    return frames


async def apply_answers(host: AgentHost, stream: ChatStream, frames: list[dict[str, Any]]) -> str | None:
    """Hand the answers to the chat channel as the answering connection; the request id of the
    continuation they asked for (None: one is running and this one waits behind it). Raises
    `AnswerRefused` when none was taken."""
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
    pending = agent.continuations.pending
    return pending.request_id if pending is not None else None


def _tool_name(part: dict[str, Any]) -> str:
    name = part.get("toolName")
    if isinstance(name, str):
        return name
    kind = part.get("type")
    return kind[5:] if isinstance(kind, str) and kind.startswith("tool-") else ""


def _dumps(wire: dict[str, Any]) -> str:
    return orjson.dumps(wire).decode()
