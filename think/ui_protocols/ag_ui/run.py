"""One AG-UI run: a `RunAgentInput` applied to the agent, then the turn it starts, as events.

    RUN_STARTED, STATE_SNAPSHOT (an agent with state)
    … the turn's events (`RunEncoder`), STATE_DELTA when the state changes meanwhile …
    MESSAGES_SNAPSHOT (the stored transcript, `to_ag_ui`)
    RUN_FINISHED {outcome} | RUN_ERROR

The agent instance is the thread: `threadId` is echoed, the transcript is the agent's own, the
same one its WebSocket clients see (and they see this run stream live). The input is applied
as a WebSocket client's frames would be, in this order, each judged by `think.turns.trust`:

* `tools` are the client's frontend tools (as `clientTools`: a server tool's name is ignored);
* `messages` are reconciled against the transcript (`think.server.reconcile`): new user
  messages are what the run says; a client cannot add assistant or system messages;
* a tool message answers a client tool's waiting call (as `cf_agent_tool_result`); one for a
  call the server has settled is its copy of the result and is skipped;
* `resume[]` answers the approval interrupts of the last run (as `cf_agent_tool_approval`):
  `resolved` approves unless `payload` is `false` or `{"approved": false}`; `cancelled` denies;
* `state`, when it differs from the agent's and is not empty, is set as `cf_agent_state` sets it;
* `forwardedProps` (an object) is the turn's custom body, for `before_turn`.

Then: new user messages start a turn; answers alone ask for the continuation that carries them
on; neither follows the turn streaming now, if one is: a MESSAGES_SNAPSHOT of what is stored,
then the stream replayed from its durable buffer and on live (the same while a crashed turn is
being recovered: its next attempt).
A run that ends on calls needing approval finishes with `outcome: {type: "interrupt"}`, one
interrupt per call; one that ends on frontend tool calls finishes `success` with
`pendingToolCallIds`. A refused input is RUN_ERROR with `code: "refused"`, before anything ran.

The turn belongs to the agent, not to the HTTP request: a client that goes away mid-run leaves
it running, and its reply is in the next run's MESSAGES_SNAPSHOT.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
from ag_ui.core import (
    BaseEvent,
    Interrupt,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
)
from pydantic import ValidationError

from think.agent import Think
from think.messages import Message, ToolPart
from think.protocol.frames import ClientToolSchema
from think.protocol.transcript import InvalidMessage
from think.stream.fanout import ChunkEvent, TurnFailed, TurnFinished, TurnStarted
from think.turns.continuation import client_tool_kinds
from think.turns.tool_results import ANY_TOOL_STATE, find_part, mid_batch
from think.turns.trust import Refused, ToolKinds
from think.ui_protocols.ag_ui.events import RunEncoder
from think.ui_protocols.ag_ui.messages import split_input, to_ag_ui
from think.ui_protocols.ag_ui.state import json_patch
from think.ui_protocols.turn_feed import ChannelEnded, StateChanged, TurnFeed

APPROVAL_REASON = "tool_approval"
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
"""What an approval interrupt expects as `payload`."""
_SETTLED = frozenset({"output-available", "output-error", "output-denied"})


class _Plan:
    """What the input asked for, once handed to the channel: the turn to follow."""

    def __init__(self) -> None:
        self.request_id: str | None = ""
        """The turn to follow; None: the next one that starts; "": none."""


async def run_events(feed: TurnFeed, run: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """The events of one run (see the module docstring)."""
    agent = feed.agent
    thread_id, run_id = run.thread_id, run.run_id
    yield RunStartedEvent(thread_id=thread_id, run_id=run_id)
    shown = agent.state
    if agent.has_state:
        yield StateSnapshotEvent(snapshot=shown)
    encoder = RunEncoder()
    try:
        plan = await _apply(feed, run)
    except (Refused, InvalidMessage, ValidationError) as exc:
        yield RunErrorEvent(message=str(exc), code="refused")
        return
    request_id = plan.request_id
    if request_id == "" and (live := agent.streams.live) is not None:
        request_id = live.request_id  # nothing new: follow the turn streaming now, after what is stored
        yield MessagesSnapshotEvent(messages=to_ag_ui(agent.session.history()))
        for replayed_event in _replay(agent, live.request_id, live.continuation, encoder):
            yield replayed_event
    elif request_id == "" and agent.recovery.recovering is not None:
        request_id = None  # an interrupted turn is being recovered: follow its next attempt
        yield MessagesSnapshotEvent(messages=to_ag_ui(agent.session.history()))
    finished: TurnFinished | None = None
    error: str | None = None
    if request_id != "":
        replayed = encoder.last_seq
        async for event in feed.events(request_id):
            if isinstance(event, StateChanged):
                if event.state != shown:
                    yield _state_event(shown, event.state)
                    shown = event.state
            elif isinstance(event, ChunkEvent):
                if event.seq > replayed:
                    for step in encoder.feed(event.chunk):
                        yield step
            elif isinstance(event, TurnStarted):
                if event.continuation:
                    encoder.message_id = _last_assistant_id(agent)
            elif isinstance(event, TurnFailed):
                error = event.error
            elif isinstance(event, TurnFinished):
                finished = event
            elif isinstance(event, ChannelEnded) and event.error is not None:
                error = event.error
    for closing in encoder.close():
        yield closing
    yield MessagesSnapshotEvent(messages=to_ag_ui(agent.session.history()))
    if (finished is not None and finished.outcome == "error") or (finished is None and error is not None):
        yield RunErrorEvent(message=error or (finished.error if finished else None) or encoder.error
                            or "The turn failed", code="turn_error")
        return
    yield _finish(agent, thread_id, run_id, encoder, aborted=finished is not None and finished.outcome == "aborted")


# ---- applying the input ---------------------------------------------------------------------------


async def _apply(feed: TurnFeed, run: RunAgentInput) -> _Plan:
    """Hand the input to the agent's chat channel as a tab's frames (see the module docstring)."""
    agent = feed.agent
    plan = _Plan()
    tools = [ClientToolSchema(name=t.name, description=t.description or "",
                              parameters=t.parameters if isinstance(t.parameters, dict) else None)
             for t in run.tools or ()]
    client = split_input(run.messages)
    session = agent.session
    asks = any(m.role == "user" and session.get(m.id) is None and session.get_message(m.id) is None
               for m in client.messages)  # new user messages: a chat request (the channel judges them)
    if run.state is not None and run.state != {} and run.state != agent.state:
        try:
            await agent.set_state(run.state, source=feed.id)
        except Exception as exc:
            raise Refused(f"state: the state update was rejected ({type(exc).__name__})") from exc
    answered = False
    for claimed in client.results:
        found = find_part(session.history(), claimed.tool_call_id, ANY_TOOL_STATE)
        part = _part(found) if found is not None else None
        if part is not None and part.state in _SETTLED:
            continue  # the client's copy of a result the server has
        await feed.send_result(claimed.tool_call_id, part.name if part is not None else "", _parsed(claimed.output),
                               error=claimed.error, client_tools=tools, auto_continue=not asks)
        answered = True
    for entry in run.resume or ():
        approved = entry.status == "resolved" and _approves(entry.payload)
        await feed.send_approval(_approval_call(agent, entry.interrupt_id), approved, auto_continue=not asks)
        answered = True
    if asks:
        body = run.forwarded_props if isinstance(run.forwarded_props, dict) else None
        plan.request_id = await feed.send_chat([m.to_json() for m in client.messages],
                                               client_tools=tools if run.tools is not None else None, body=body)
    elif answered:
        plan.request_id = feed.continuation()
        history = session.history()
        if plan.request_id is None and mid_batch(history[-1] if history else None):
            plan.request_id = ""  # the batch waits for more answers: nothing runs now
    return plan


def _part(found: tuple[Message, int]) -> ToolPart:
    part = found[0].parts[found[1]]
    assert isinstance(part, ToolPart)
    return part


def _parsed(output: Any) -> Any:
    """A tool message's text: the JSON value it holds, or the text itself."""
    if isinstance(output, str) and output[:1] in ("{", "["):
        try:
            return orjson.loads(output)
        except orjson.JSONDecodeError:
            pass
    return output


def _approves(payload: Any) -> bool:
    if isinstance(payload, bool):
        return payload
    if isinstance(payload, dict) and isinstance(payload.get("approved"), bool):
        return bool(payload["approved"])
    return True


def _approval_call(agent: Think, interrupt_id: str) -> str:
    """The tool call an interrupt id names (the approval's id, or the call's own id); an id
    nothing waits under is passed on as it is, for the channel to refuse."""
    for message in reversed(agent.session.history()):
        for part in message.tool_parts:
            if part.approval is not None and part.approval.id == interrupt_id:
                return part.tool_call_id
    return interrupt_id


# ---- the stream -----------------------------------------------------------------------------------


def _replay(agent: Think, request_id: str, continuation: bool, encoder: RunEncoder) -> list[BaseEvent]:
    """The buffered chunks of the live stream `request_id`, through `encoder`."""
    if continuation:
        encoder.message_id = _last_assistant_id(agent)
    out: list[BaseEvent] = []
    for seq, body in agent.streams.chunks(request_id):
        chunk = orjson.loads(body)
        encoder.last_seq = seq
        if isinstance(chunk, dict):
            out.extend(encoder.feed(chunk))
    return out


def _last_assistant_id(agent: Think) -> str | None:
    history = agent.session.history()
    return history[-1].id if history and history[-1].role == "assistant" else None


def _state_event(old: Any, new: Any) -> BaseEvent:
    patch = json_patch(old, new) if isinstance(old, dict) and isinstance(new, dict) else None
    if patch is None:
        return StateSnapshotEvent(snapshot=new)
    return StateDeltaEvent(delta=patch)


def _finish(agent: Think, thread_id: str, run_id: str, encoder: RunEncoder, *, aborted: bool) -> RunFinishedEvent:
    history = agent.session.history()
    last = history[-1] if history and history[-1].role == "assistant" else None
    waiting = [p for p in last.tool_parts] if last is not None else []
    approvals = [p for p in waiting if p.state == "approval-requested"]
    if approvals:
        return RunFinishedEvent(thread_id=thread_id, run_id=run_id, usage=encoder.usage or None,
                                outcome=RunFinishedInterruptOutcome(interrupts=[_interrupt(p) for p in approvals]))
    if aborted:
        return RunFinishedEvent(thread_id=thread_id, run_id=run_id, usage=encoder.usage or None,
                                outcome=RunFinishedCancelledOutcome())
    kinds: ToolKinds = client_tool_kinds(agent, None)
    pending = [p.tool_call_id for p in waiting if p.state == "input-available" and kinds.kind(p.name) == "client"]
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, usage=encoder.usage or None,
                            outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=pending or None))


def _interrupt(part: ToolPart) -> Interrupt:
    arguments = orjson.dumps(part.input if part.input is not None else {}).decode()
    return Interrupt(id=part.approval.id if part.approval is not None else part.tool_call_id,
                     reason=APPROVAL_REASON, tool_call_id=part.tool_call_id,
                     message=f"Approve the call of {part.name} with {arguments}?",
                     response_schema=APPROVAL_SCHEMA, metadata={"toolName": part.name})
