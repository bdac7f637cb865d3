"""Running one admitted turn, start to finish: the pipeline of a chat turn in one function.

    queue slot → save new messages → repair the transcript → assemble the request → before_turn
    → run_loop (chunks: fold into the reply, publish) → persist the reply (shielded) → finish

Every exit path persists what the reply has so far and publishes `TurnFinished`; hook failures
become turn errors, never a half-persisted turn.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

import anyio

from think.context.convert import repair_interrupted_tools
from think.context.prompt import with_capabilities
from think.hooks import TurnConfig, TurnContext
from think.loop import LoopResult, run_loop
from think.messages import JSONObject, Message
from think.models.base import Model, ModelRequest, ModelSettings, ToolSpec
from think.stream.fanout import ChunkEvent, TranscriptChanged, TurnFailed, TurnFinished, TurnStarted
from think.stream.fold import Fold
from think.tools.tool import Tool, ToolContext, as_tool_map
from think.turns.turn import TurnRequest, TurnResult, TurnStatus

if TYPE_CHECKING:
    from think.agent import Think

log = logging.getLogger("think.turns")
PERSIST_TIMEOUT = 10.0


def _settings(config: TurnConfig | None) -> ModelSettings:
    if config is None:
        return ModelSettings()
    return ModelSettings(
        max_output_tokens=config.max_output_tokens, temperature=config.temperature, top_p=config.top_p,
        top_k=config.top_k, presence_penalty=config.presence_penalty,
        frequency_penalty=config.frequency_penalty,
        stop_sequences=tuple(config.stop_sequences) if config.stop_sequences is not None else None,
        seed=config.seed, tool_choice=config.tool_choice,
        headers=dict(config.headers) if config.headers is not None else None,
        provider_options=config.provider_options, timeout=config.timeout)


async def run_turn(agent: Think, turn: TurnRequest) -> TurnResult:
    """Wait for the turn's place in the queue, then run it. See the module docstring."""
    async with agent.turn_queue.slot(turn.request_id) as current:
        if not current:
            return TurnResult(request_id=turn.request_id, status="skipped", continuation=turn.continuation)
        return await _run_admitted(agent, turn)


async def _run_admitted(agent: Think, turn: TurnRequest) -> TurnResult:
    session = agent.session
    request_id = turn.request_id
    generation = agent.turn_queue.generation
    # Save the new messages first: even a turn that fails later keeps what the user said.
    try:
        new = turn.messages(list(session.history())) if callable(turn.messages) else turn.messages
        if turn.parent_id is not None and not new:
            session.checkout(turn.parent_id)  # regenerate: the reply becomes a sibling branch
        saved = session.save(new, parent_id=turn.parent_id) if new else []
    except Exception as exc:
        return await _fail_before_stream(agent, turn, exc, stage="persist", persisted=False)
    user_ids = tuple(m.id for m in saved if m.role == "user")
    if saved:
        await agent.fanout.publish(TranscriptChanged(tuple(session.history()), exclude=turn.sender))

    try:
        prepared = await _prepare(agent, turn)
    except Exception as exc:
        return await _fail_before_stream(agent, turn, exc, stage="turn", persisted=bool(saved))
    model, request, tools, max_steps, send_reasoning = prepared

    reply = Message(id=str(uuid.uuid4()), role="assistant")
    fold = Fold(reply, continuation=turn.continuation)
    seq = 0

    async def emit(chunk: JSONObject) -> None:
        nonlocal seq
        fold.apply(chunk)
        if chunk["type"] == "error":
            return  # clients get the error as a TurnFailed event, after on_chat_error has had its say
        await agent.fanout.publish(ChunkEvent(request_id, seq, chunk, turn.continuation))
        seq += 1
        await agent.on_chunk(chunk)

    await agent.fanout.publish(TurnStarted(request_id, turn.continuation, user_ids))
    status: TurnStatus = "completed"
    error: str | None = None
    result: LoopResult | None = None
    try:
        with agent.cancellations.scope(request_id) as scope:
            result = await run_loop(
                model, request, tools, emit=emit, hooks=agent, max_steps=max_steps,
                message_id=None if turn.continuation else reply.id, send_reasoning=send_reasoning,
                tool_context=ToolContext(tool_call_id="", tool_name="", request_id=request_id,
                                         messages=tuple(session.history()), agent=agent),
                resolve_model=agent.resolve_model)
        if scope.cancelled_caught:
            status = "aborted"
        elif result is not None and result.status == "error":
            status, error = "error", result.error
    except Exception as exc:  # a hook or a tool wrapper broke: the turn fails, the partial is kept
        log.exception("turn %s failed", request_id)
        status, error = "error", f"{type(exc).__name__}: {exc}"

    if error is not None:
        error = await _error_text(agent, error, request_id, stage="stream", persisted=True)
        await agent.fanout.publish(TurnFailed(request_id, error, turn.continuation, user_ids))
    # A clear during the turn means the conversation is gone: the reply must not start a new one.
    cleared = agent.turn_queue.generation != generation
    stored = None if cleared else await _persist_reply(agent, turn, reply)
    finished = TurnResult(request_id=request_id, status=status, error=error, message=stored,
                          continuation=turn.continuation, user_message_ids=user_ids)
    await agent.fanout.publish(TurnFinished(request_id, status, stored, error, turn.continuation, user_ids))
    try:
        await agent.on_chat_response(finished)
    except Exception:
        log.exception("on_chat_response raised; the turn is already persisted")
    return finished


async def _prepare(agent: Think, turn: TurnRequest) -> tuple[Model, ModelRequest, dict[str, Tool], int, bool]:
    session = agent.session
    repaired = repair_interrupted_tools(session.unsettled())
    if repaired:
        session.save(repaired)
    tools = dict(agent.all_tools())
    for client in turn.client_tools:
        tools[client.name] = client
    model = agent.resolve_model(agent.get_model())
    model_messages, extra_system = agent.model_history.build(session)
    system = agent.get_system_prompt()
    if extra_system:
        system = f"{system}\n\n{extra_system}" if system else extra_system
    system = with_capabilities(system, tools)
    if not model_messages:
        raise ValueError("No messages to send to the model: save a user message first.")
    config = await agent.before_turn(TurnContext(system=system, messages=tuple(model_messages), tools=tools,
                                                 model=model, continuation=turn.continuation, body=turn.body,
                                                 request_id=turn.request_id))
    max_steps, send_reasoning = agent.max_steps, agent.send_reasoning
    if config is not None:
        if config.model is not None:
            model = agent.resolve_model(config.model)
        if config.system is not None:
            system = config.system
        if config.messages is not None:
            model_messages = list(config.messages)
        if config.tools:
            tools.update(as_tool_map(config.tools))
        if config.active_tools is not None:
            allowed = set(config.active_tools)
            tools = {name: t for name, t in tools.items() if name in allowed}
        if config.max_steps is not None:
            max_steps = config.max_steps
        if config.send_reasoning is not None:
            send_reasoning = config.send_reasoning
    specs = tuple(ToolSpec(t.name if t.name == n else n, t.description, t.input_schema) for n, t in tools.items())
    request = ModelRequest(system=system, messages=tuple(model_messages), tools=specs, settings=_settings(config))
    return model, request, tools, max_steps, send_reasoning


async def _persist_reply(agent: Think, turn: TurnRequest, reply: Message) -> Message | None:
    """Save the reply if it has any part; shielded, so a cancelled turn still keeps its partial."""
    if not reply.parts:
        return None
    with anyio.move_on_after(PERSIST_TIMEOUT, shield=True):
        try:
            stored = agent.session.save([reply])[0]
        except Exception:
            log.exception("could not persist the reply of turn %s", turn.request_id)
            return None
        await agent.fanout.publish(TranscriptChanged(tuple(agent.session.history())))
        return stored
    return None


async def _error_text(agent: Think, error: str | BaseException, request_id: str, *, stage: str,
                      persisted: bool) -> str:
    exc = error if isinstance(error, BaseException) else RuntimeError(error)
    try:
        replaced: Any = await agent.on_chat_error(exc, request_id=request_id, stage=stage,
                                                  messages_persisted=persisted)
    except Exception:
        log.exception("on_chat_error raised; the original error is reported")
        replaced = exc
    return str(replaced) if replaced is not None else str(exc)


async def _fail_before_stream(agent: Think, turn: TurnRequest, exc: Exception, *, stage: str,
                              persisted: bool) -> TurnResult:
    log.warning("turn %s failed before streaming (%s): %s", turn.request_id, stage, exc)
    text = await _error_text(agent, exc, turn.request_id, stage=stage, persisted=persisted)
    await agent.fanout.publish(TurnFinished(turn.request_id, "error", None, text, turn.continuation))
    return TurnResult(request_id=turn.request_id, status="error", error=text, continuation=turn.continuation)


def new_request_id() -> str:
    return str(uuid.uuid4())

