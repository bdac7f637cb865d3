"""Running one admitted turn, start to finish: the pipeline of a chat turn in one function.

    queue slot → save new messages → repair the transcript → assemble the request → before_turn
    → run_loop (chunks: fold into the reply, publish) → persist the reply (shielded) → finish

Every exit path persists what the reply has so far and publishes `TurnFinished`; hook failures
become turn errors, never a half-persisted turn.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any, Literal

import anyio

from think import observe
from think.actions.api import decide_turn_grant, forget_turn_grant
from think.attachments import ReplyAttachments
from think.context.convert import repair_interrupted_tools
from think.context.overflow import ContextGuard, compact_for_retry
from think.context.prompt import with_capabilities
from think.context.reminders import announce_changes
from think.hook_results import turn_config
from think.hooks import ChatErrorContext, ChatErrorStage, TurnConfig, TurnContext
from think.loop import LoopResult, run_loop
from think.messages import JSONObject, Message
from think.models.base import Model, ModelRequest, ModelSettings, ToolSpec
from think.protocol.limits import chunk_within_limit
from think.stream.fanout import ChunkEvent, Fanout, TranscriptChanged, TurnFailed, TurnFinished, TurnStarted
from think.stream.fold import Fold
from think.tools.tool import Tool, ToolContext, as_tool_map
from think.turns.extend import extended_reply, joined, with_continue_prompt
from think.turns.output import TurnExtras
from think.turns.tool_results import approved_calls, settle_earlier_calls
from think.turns.trust import agent_tools, merge_client_tools
from think.turns.turn import ActiveTurn, TurnRequest, TurnResult, TurnStatus
from think.turns.turn_log import log_turn, turn_clock
from think.turns.writer import writing
from think.workspace.attachments import resolve_for_model, store_attachments

if TYPE_CHECKING:
    from think.agent import Think
    from think.hooks import LoopHooks
    from think.recovery.store import Fiber
    from think.sessions.session import Session

log = logging.getLogger("think.turns")
PERSIST_TIMEOUT = 10.0
ON_CHUNK_TYPES = frozenset({"text-delta", "reasoning-delta", "source-url", "source-document", "tool-input-start",
                            "tool-input-delta", "tool-input-available", "tool-output-available"})
"""The chunks `on_chunk` observes: the UI forms of the AI SDK stream parts the original's `onChunk`
gets (`text-delta`, `reasoning-delta`, `source`, `tool-input-start`, `tool-input-delta`,
`tool-call`, `tool-result`), not the framing chunks (`start`, `start-step`, `text-start`, …)."""


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
    """Wait for the turn's place in the queue, then run it (and the turns steered into it, see
    `think.turns.steer`). See the module docstring."""
    steered = agent.steering.offer(turn, agent.turn_queue.generation) if turn.when_busy == "steer" else None
    if steered is not None and (result := await agent.steering.wait(steered)) is not None:
        return result
    async with agent.turn_queue.slot(turn.request_id) as current:
        if not current:
            return TurnResult(request_id=turn.request_id, status="skipped", continuation=turn.continuation)
        return await agent.steering.host(turn, lambda t: _run_traced(agent, t),
                                         lambda: agent.turn_queue.generation, new_request_id)


async def _run_traced(agent: Think, turn: TurnRequest) -> TurnResult:
    queue = agent.turn_queue
    queue.active_request_id = turn.request_id
    queue.active_turn = ActiveTurn(request_id=turn.request_id, session_id=turn.session_id, trigger=turn.trigger,
                                   continuation=turn.continuation, signal=agent.cancellations.signal(turn.request_id))
    try:
        with observe.turn(type(agent).kebab_name(), agent.name, turn.request_id, session_id=turn.session_id,
                          continuation=turn.continuation, parent=turn.trace_parent) as traced:
            result = await _run_admitted(agent, turn)
            traced.finished(result.status, result.error, result.usage)
            return result
    finally:
        queue.active_turn = None
        agent.cancellations.forget(turn.request_id)


async def _run_admitted(agent: Think, turn: TurnRequest) -> TurnResult:
    request_id = turn.request_id
    generation = agent.turn_queue.generation
    started = turn_clock()
    try:
        session = agent.sessions.session(turn.session_id)
    except Exception as exc:  # no such session: nobody listens to it either
        return await _fail_before_stream(agent, turn, exc, stage="turn", persisted=False, fanout=Fanout())
    fanout = session.fanout
    # Save the new messages first: even a turn that fails later keeps what the user said.
    try:
        new = turn.messages(list(session.history())) if callable(turn.messages) else turn.messages
        if new is None:  # the messages function withdrew the turn (a cancelled submission)
            return TurnResult(request_id=request_id, status="skipped", continuation=turn.continuation)
        if turn.parent_id is not None and not new:
            session.checkout(turn.parent_id)  # regenerate: the reply becomes a sibling branch
        if new:  # attached files go to the workspace first; the message points at them there
            new = [await store_attachments(agent.workspace, m, max_bytes=agent.max_attachment_bytes)
                   if m.role == "user" else m for m in new]
        # The question and the turn's recovery fiber are one commit: a kill cannot keep the one
        # without the other (a question nobody would ever answer). Durable from here: a crash is
        # recovered at the next start.
        with agent.db.transaction():
            saved = session.save(new, parent_id=turn.parent_id) if new else []
            agent.recovery.begin(turn, session)
    except Exception as exc:
        return await _fail_before_stream(agent, turn, exc, stage="persist", persisted=False, fanout=fanout)
    user_ids = tuple(m.id for m in saved if m.role == "user")
    if saved:
        await fanout.publish(TranscriptChanged(tuple(session.history()), exclude=turn.sender))
        await session.announce()
    if turn.admit is not None and not await turn.admit():  # superseded by a newer message
        agent.recovery.withdraw(request_id)
        return TurnResult(request_id=request_id, status="skipped", continuation=turn.continuation,
                          user_message_ids=user_ids)

    try:
        prepared = await _prepare(agent, turn, session)
    except Exception as exc:
        failed = await _fail_before_stream(agent, turn, exc, stage="turn", persisted=bool(saved), fanout=fanout)
        await agent.recovery.end(request_id, "error")
        return failed
    model, request, tools, max_steps, send_reasoning, extras = prepared

    history = session.history()
    # A recovery continuation streams into the partial it continues (closed first, see extend.py).
    base = extended_reply(history) if turn.extend and turn.continuation else None
    if base is not None:
        session.save([base])
    reply = base.copy_deep() if base is not None else Message(id=str(uuid.uuid4()), role="assistant")
    fold = Fold(reply, continuation=turn.continuation)
    # The message the turn's tool calls belong to: a continuation extends the newest reply.
    message_id = history[-1].id if turn.continuation and history and history[-1].role == "assistant" else reply.id
    attachments = ReplyAttachments(request_id, agent.db)
    seq = 0
    stall = agent.recovery.watchdog(turn, extras.stall_timeout)
    from think.usage.meter import TurnUsage, UsageMeter  # loaded with the first turn, not with `import think`

    # A recovered answer starts from the calls its message already made (the ledger has them even
    # when a kill cut the turn before its usage reached the message).
    extension_hooks = agent._extension_hooks(agent)  # extensions' hooks run after the agent's
    meter = UsageMeter(TurnUsage(agent.usage_ledger.message_steps(base.id)) if base is not None else None,
                       on_step=lambda step, index: agent.usage_ledger.record(
                           step, request_id=request_id, session_id=turn.session_id, message_id=message_id, index=index))

    async def emit(chunk: JSONObject) -> None:
        nonlocal seq
        stall.touch()
        if (bounded := chunk_within_limit(chunk)) is not chunk:  # nothing too deep enters the reply
            log.warning("turn %s: a %s chunk is nested too deeply; %s", request_id, chunk.get("type"),
                        "dropped" if bounded is None else f"sent as {bounded['type']}" if bounded["type"] != chunk.get(
                            "type") else "sent without its nested fields")
            if bounded is None:
                return
            chunk = bounded
        fold.apply(chunk)
        attachments.observe(chunk)
        if fold.cross_message:  # the output of a call made in an earlier message (an approved tool)
            await settle_earlier_calls(session, fold.cross_message)
            fold.cross_message.clear()
        if chunk["type"] == "error":
            return  # clients get the error as a TurnFailed event, after on_chat_error has had its say
        if chunk["type"] == "start" and seq:
            return  # a retry after a context overflow: clients already have the message's start
        current, seq = seq, seq + 1  # before the await: chunks of parallel tool calls never share one
        await fanout.publish(ChunkEvent(request_id, current, chunk, turn.continuation))
        if chunk["type"] in ON_CHUNK_TYPES:
            await agent.on_chunk(chunk)
            await extension_hooks.after_chunk(chunk)

    await fanout.publish(TurnStarted(request_id, turn.continuation, user_ids,
                                     extends=base.id if base is not None else None))
    overflow_retries = agent.context_overflow.max_retries if agent.context_overflow.reactive else 0
    status: TurnStatus = "completed"
    error: str | None = None
    while True:
        status, error = "completed", None
        failure: BaseException | str | None = None  # what classify_chat_error looks at
        result: LoopResult | None = None
        try:
            with agent.cancellations.scope(request_id) as scope, stall, writing(agent, emit):
                result = await run_loop(
                    model, request, tools, emit=emit, hooks=_hooks(agent, session, request), max_steps=max_steps,
                    message_id=None if turn.continuation else reply.id, send_reasoning=send_reasoning,
                    tool_context=ToolContext(tool_call_id="", tool_name="", request_id=request_id, trigger=turn.trigger,
                                             message_id=message_id, messages=tuple(session.history()), agent=agent,
                                             reply_attachments=attachments,
                                             signal=agent.cancellations.signal(request_id)),
                    resolve_model=agent.resolve_model,
                    approved_calls=approved_calls(session.history()) if turn.continuation else (),
                    stop_when=extras.stop_when, max_retries=extras.max_retries, usage=meter,
                    steer=agent.steering.pending)
            if scope.cancelled_caught or stall.fired:  # a stall: closed cleanly, then recovered
                status = "aborted"
            elif result is not None and result.status == "error":
                status, error = "error", result.error
                failure = error
        except Exception as exc:  # a hook or a tool wrapper broke: the turn fails, the partial is kept
            log.exception("turn %s failed", request_id)
            status, error, failure = "error", f"{type(exc).__name__}: {exc}", exc
        # A context overflow: drop the failed attempt, compact, and run the turn again.
        if (failure is not None and overflow_retries > 0
                and agent.classify_chat_error(failure) == "context_overflow" and await compact_for_retry(session)):
            overflow_retries -= 1
            reply = base.copy_deep() if base is not None else Message(id=reply.id, role="assistant")
            fold = Fold(reply, continuation=turn.continuation)
            try:
                model, request, tools, max_steps, send_reasoning, extras = await _prepare(agent, turn, session)
            except Exception as exc:
                status, error = "error", f"{type(exc).__name__}: {exc}"
            else:
                continue
        break

    # A clear during the turn means the conversation is gone: the reply must not start a new one.
    cleared = agent.turn_queue.generation != generation
    classification = agent.classify_chat_error(failure) if failure is not None else None
    # A transient or rate-limit failure is not the end: recovery retries it after a backoff.
    transient = (classification in ("transient", "rate_limit") and not cleared
                 and agent.recovery.can_recover(request_id))
    if transient:
        log.warning("turn %s: the model failed (%s: %s); it is retried", request_id, classification, error)
        status, error = "aborted", None
    elif error is not None:
        error = await _error_text(agent, error, request_id, stage="stream", persisted=True,
                                  classification=classification, trigger=turn.trigger)
        await fanout.publish(TurnFailed(request_id, error, turn.continuation, user_ids))
    if base is not None:  # a recovered answer: text that continues a cut-off text joins it
        reply = joined(reply)
    if meter.turn.steps and reply.parts:  # also when no finish chunk carried it (an error, a cancel)
        reply.metadata = {**(reply.metadata if isinstance(reply.metadata, dict) else {}),
                          "usage": await meter.final()}
    active = agent.turn_queue.active_turn
    if active is not None and active.message_metadata and reply.parts:  # `Think.message_metadata`
        reply.metadata = {**(reply.metadata if isinstance(reply.metadata, dict) else {}), **active.message_metadata}
    stalled = stall.fired and not cleared
    stored, settled = (None, False) if cleared else await _persist_reply(
        agent, turn, reply, session, outcome=status, settle=not (stalled or transient))
    output = extras.output.answer(result.steps) if extras.output is not None and result is not None else None
    await fanout.publish(TurnFinished(request_id, status, stored, error, turn.continuation, user_ids))
    recovering = await agent.recovery.end(request_id, status, stalled=stalled, transient=transient, settled=settled)
    forget_turn_grant(agent, request_id)
    finished = TurnResult(request_id=request_id, status=status, error=error, message=stored,
                          continuation=turn.continuation, user_message_ids=user_ids,
                          attachments=tuple(attachments.kept), output=output, recovering=recovering,
                          steered=result is not None and result.status == "steered" and status == "completed",
                          usage=meter.turn if meter.turn.steps else None)
    outcome = result.status if status == "completed" and result is not None else status  # max-steps, awaiting-…
    log_turn(agent, request_id, model.model_id, result, outcome, started, error)
    if stored is not None:
        await session.compact_if_needed()
    try:
        await agent.on_chat_response(finished)
    except Exception:
        log.exception("on_chat_response raised; the turn is already persisted")
    return finished


def _hooks(agent: Think, session: Session, request: ModelRequest) -> LoopHooks:
    """The agent's hooks (then its extensions'), behind the proactive compaction check when it is
    configured."""
    hooks = agent._extension_hooks(agent)
    policy = agent.context_overflow
    if policy.max_input_tokens is None or not session.can_compact:
        return hooks
    return ContextGuard(hooks, session, policy, base_messages=len(request.messages),
                        history=lambda: agent.model_history.build(session)[0])


async def _prepare(agent: Think, turn: TurnRequest,
                   session: Session) -> tuple[Model, ModelRequest, dict[str, Tool], int, bool, TurnExtras]:
    repaired = repair_interrupted_tools(session.unsettled())
    if repaired:
        session.save(repaired)
    await session.compact_if_needed()
    await agent._wait_for_mcp()  # `wait_for_mcp_connections`: servers still connecting
    # Later sources win a name: workspace and get_tools(), context blocks, skills, MCP, client tools;
    # but a client tool never replaces a server tool (think.turns.trust).
    tools = agent_tools(agent, session, for_model=True)
    for name in merge_client_tools(tools, turn.client_tools):
        log.warning("turn %s: client tool %r is a server tool of this agent; the server's tool is used",
                    turn.request_id, name)
    model = agent.resolve_model(agent.get_model())
    if agent.media_eviction is not None:  # aged images out to workspace files (think.sessions.eviction)
        await agent.media_evictor.evict(session, agent.media_eviction)
    await announce_changes(session)  # `when_changed="remind"` blocks: after the cached prefix
    model_messages, extra_system = agent.model_history.build(session)
    known, files = agent.model_history.scanned(session)  # which older messages have workspace files
    system = await session.system_prompt() or agent.get_system_prompt()
    if catalog := agent.skills.catalog():
        system = f"{system}\n\n{catalog}" if system else catalog
    if extra_system:
        system = f"{system}\n\n{extra_system}" if system else extra_system
    system = with_capabilities(system, tools)
    if not model_messages:
        raise ValueError("No messages to send to the model: save a user message first.")
    snapshot = tuple(model_messages)  # what the hooks see (one copy for both, unless changed)
    turn_ctx = TurnContext(system=system, messages=snapshot, tools=tools, model=model,
                           continuation=turn.continuation, body=turn.body, request_id=turn.request_id,
                           session_id=turn.session_id, trigger=turn.trigger,
                           signal=agent.cancellations.signal(turn.request_id))
    config = turn_config(await agent.before_turn(turn_ctx))
    config = await agent._extension_hooks(agent).before_turn(turn_ctx, config)  # after the agent's own
    max_steps, send_reasoning = agent.max_steps, agent.send_reasoning
    if config is not None:
        if config.model is not None:
            model = agent.resolve_model(config.model)
        if config.system is not None:
            system = config.system
        if config.messages is not None:
            model_messages = list(config.messages)
            snapshot = tuple(model_messages)
            known, files = 0, ()
        if config.tools:
            tools.update(as_tool_map(config.tools))
        if config.active_tools is not None:
            allowed = set(config.active_tools)
            tools = {name: t for name, t in tools.items() if name in allowed}
        if config.max_steps is not None:
            max_steps = config.max_steps
        if config.send_reasoning is not None:
            send_reasoning = config.send_reasoning
    await decide_turn_grant(agent, TurnContext(  # the permissions of this turn's actions (think.actions)
        system=system, messages=snapshot, tools=tools, model=model, continuation=turn.continuation,
        body=turn.body, request_id=turn.request_id, session_id=turn.session_id, trigger=turn.trigger,
        signal=agent.cancellations.signal(turn.request_id)))
    model_messages = with_continue_prompt(model_messages)  # a cut-off reply is continued, not prefilled
    # Attachments: workspace files read back into data: URLs.
    model_messages = await resolve_for_model(model_messages, agent.workspace, known=known, files=files)
    extras = TurnExtras.of(config)  # stop conditions, retries, structured output (its final_answer tool)
    system = extras.apply(tools, system)
    specs = tuple(ToolSpec(t.name if t.name == n else n, t.description, t.input_schema) for n, t in tools.items())
    request = ModelRequest(system=system, messages=tuple(model_messages), tools=specs, settings=_settings(config))
    return model, request, tools, max_steps, send_reasoning, extras


async def _persist_reply(agent: Think, turn: TurnRequest, reply: Message, session: Session, *, outcome: str,
                         settle: bool) -> tuple[Message | None, Fiber | Literal[False] | None]:
    """Save the reply if it has any part; shielded, so a cancelled turn still keeps its partial.

    The reply, the end of its resumable stream and (`settle`: the turn ended for good) the removal
    of its recovery fiber are one transaction: a kill leaves all three or none. Returns the stored
    reply and the fiber removed with it (False: none was removed here; `recovery.end` does it)."""
    if not reply.parts:
        return None, False
    with anyio.move_on_after(PERSIST_TIMEOUT, shield=True):
        try:
            stored, settled = _store_turn_end(agent, turn.request_id, reply, session, outcome, settle)
        except Exception:
            log.exception("could not persist the reply of turn %s", turn.request_id)
            return None, False
        await session.fanout.publish(TranscriptChanged(tuple(session.history())))
        await session.announce()
    return stored, settled  # stored even when announcing it outlasted the timeout


def _store_turn_end(agent: Think, request_id: str, reply: Message, session: Session, outcome: str,
                    settle: bool) -> tuple[Message, Fiber | Literal[False] | None]:
    if session.db is not agent.db:  # not expected: every session lives in the agent's database
        return session.save([reply])[0], False
    try:
        with agent.db.transaction():
            sealed = agent.streams.sealing(request_id, outcome, reply.id)
            settled: Fiber | Literal[False] | None = agent.recovery.settle(request_id) if settle else False
            stored = session.save([reply])[0]
    except Exception:  # the reply itself, or the stream's or the fiber's statement, failed: the reply alone
        stored = session.save([reply])[0]  # raises again if the reply was the trouble
        log.warning("turn %s: the end of its stream and its recovery fiber were not stored with its reply "
                    "(they follow on their own)", request_id, exc_info=True)
        return stored, False
    if sealed is not None:
        sealed()
    return stored, settled


async def _error_text(agent: Think, error: str | BaseException, request_id: str, *, stage: ChatErrorStage,
                      persisted: bool, classification: str | None = None, trigger: str = "") -> str:
    exc = error if isinstance(error, BaseException) else RuntimeError(error)
    try:
        replaced: Any = await agent.on_chat_error(exc, ChatErrorContext(
            request_id=request_id, stage=stage, messages_persisted=persisted, classification=classification,
            trigger=trigger, signal=agent.cancellations.signal(request_id)))
    except Exception:
        log.exception("on_chat_error raised; the original error is reported")
        replaced = exc
    return str(replaced) if replaced is not None else str(exc)


async def _fail_before_stream(agent: Think, turn: TurnRequest, exc: Exception, *, stage: ChatErrorStage,
                              persisted: bool, fanout: Fanout) -> TurnResult:
    log.warning("turn %s failed before streaming (%s): %s", turn.request_id, stage, exc)
    text = await _error_text(agent, exc, turn.request_id, stage=stage, persisted=persisted, trigger=turn.trigger)
    await fanout.publish(TurnFinished(turn.request_id, "error", None, text, turn.continuation))
    return TurnResult(request_id=turn.request_id, status="error", error=text, continuation=turn.continuation)


def new_request_id() -> str:
    return str(uuid.uuid4())

