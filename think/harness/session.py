"""`HarnessSession`: one session of a `ThinkHarness`, as a handle over the agent's own APIs.

Every method is a call into `Think` (submissions, turns, sessions, the resumable stream) for
this session id: the harness adds names, not machinery. Operations are submissions
(`operation_id` is the submission id), so they are durable and idempotent; `wait` answers with
data (`Answered` or `Unanswered(reason)`), never by raising for an unanswered input.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import orjson

from think.messages import JSONObject, Message, TextPart
from think.stream.fanout import ChunkEvent, TranscriptChanged, TurnEvent, TurnFailed, TurnFinished, TurnStarted
from think.submissions.store import Submission
from think.turns.callbacks import MessageLike, TurnInput, to_message
from think.turns.continuation import (
    ToolAnswer,
    client_tool_kinds,
    client_tool_schemas,
    continue_session,
    usable_client_tools,
)
from think.turns.trust import Refused, UnansweredReason, client_input
from think.turns.turn import TurnResult, WhenBusy

if TYPE_CHECKING:
    from think.agent import Think
    from think.protocol.frames import ClientToolSchema
    from think.sessions.search import SearchResult
    from think.sessions.session import Session

Listener = Callable[[JSONObject], Awaitable[None] | None]
"""A `subscribe` listener: sync or async, gets one event dict at a time."""


@dataclass(frozen=True, slots=True)
class Accepted:
    """What `submit` returns."""

    operation_id: str
    session: str
    accepted: bool
    """False: a known `operation_id` (nothing new runs), or an input refused (see `wait`)."""
    ignored_tools: tuple[str, ...] = ()
    """`client_tools` names ignored because a server tool has that name."""


@dataclass(frozen=True, slots=True)
class Answered:
    """`wait`: the operation was answered; `text` is the reply's text, `message` the reply."""

    status: Literal["done"]
    text: str
    message: Message | None = None


@dataclass(frozen=True, slots=True)
class Unanswered:
    """`wait` (or a client's tool answer): no answer, and why (`reason`, data, not an exception):
    `client_role`, `not_client_tool`, `duplicate`, `interrupted` (failed, or the recovery budget
    ran out), `aborted` (cancelled, or the session was reset)."""

    status: Literal["unanswered"]
    reason: UnansweredReason
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Prompted:
    """What `prompt` returns: the answer's text and the session's messages after it."""

    text: str
    messages: tuple[Message, ...]
    result: TurnResult


@dataclass(frozen=True, slots=True)
class InFlight:
    """The running operation of a session and its chunks so far (`in_flight`)."""

    request_id: str
    chunks: tuple[JSONObject, ...]
    orphaned: bool = False
    """A crash left this stream (its chunks come from storage); no turn produces it now."""


class HarnessSession:
    """A session handle (`harness.session(id)`); `""` is the root session, the chat transcript."""

    def __init__(self, agent: Think, session_id: str, refused: dict[str, UnansweredReason]) -> None:
        self.agent = agent
        self.id = session_id
        self._refused = refused

    @property
    def session(self) -> Session:
        return self.agent.sessions.session(self.id)

    # ---- operations --------------------------------------------------------------------------

    async def submit(self, input: MessageLike | Sequence[MessageLike], *, operation_id: str | None = None,
                     source: Literal["server", "client"] = "server",
                     client_tools: Sequence[ClientToolSchema | Mapping[str, Any]] | None = None,
                     when_busy: WhenBusy = "queue") -> Accepted:
        """Accept `input` durably and return at once (`wait` for the answer). `source="client"`
        input follows the client rules (`think.turns.trust.client_input`): a refused one is not
        stored and `wait` answers `Unanswered(reason)`. `client_tools` (`{name, description,
        parameters}` dicts or `ClientToolSchema`s) are tools the caller runs: the turn may call
        them and waits for `add_tool_result(…, source="client")`; a name a server tool has is
        ignored (`Accepted.ignored_tools`). `when_busy="steer"` joins a running turn at its next
        step boundary (`think.turns.steer`)."""
        listed = [input] if isinstance(input, str | Message | dict) else list(input)
        messages = [to_message(m) for m in listed]
        if source == "client":
            session = self.session
            messages, reason = client_input(messages, stored=lambda mid: session.get_message(mid) is not None,
                                            reserved=self.agent.reserved_metadata_keys)
            if reason is not None:
                refused_id = operation_id or f"refused-{len(self._refused) + 1}-{id(self)}"
                self._refused[refused_id] = reason
                return Accepted(refused_id, self.id, accepted=False)
        elif source != "server":
            raise ValueError(f"source must be 'server' or 'client', not {source!r}")
        ignored: list[str] = []
        if client_tools is not None:
            _, ignored = usable_client_tools(self.agent, client_tool_schemas(client_tools), self.id)
        sub = await self.agent.submit_messages(messages, submission_id=operation_id, session=self.id,
                                               when_busy=when_busy, client_tools=client_tools)
        return Accepted(sub.submission_id, self.id, sub.accepted, tuple(ignored) if sub.accepted else ())

    async def wait(self, operation_id: str, timeout: float | None = None) -> Answered | Unanswered:  # noqa: ASYNC109
        """The operation's outcome once it has finished (`TimeoutError` after `timeout` seconds)."""
        if operation_id in self._refused:
            return Unanswered("unanswered", self._refused[operation_id])
        sub = await self.agent.wait_for_submission(operation_id, timeout=timeout)
        if sub.status == "completed":
            reply = self._reply_to(operation_id)
            return Answered("done", reply.text if reply is not None else "", reply)
        if sub.status in ("aborted", "skipped"):
            return Unanswered("unanswered", "aborted", sub.error)
        return Unanswered("unanswered", "interrupted", sub.error)

    def inspect(self, operation_id: str) -> Submission | None:
        return self.agent.inspect_submission(operation_id)

    def pending(self) -> list[Submission]:
        """This session's operations that have not finished, oldest first."""
        return [s for s in self.agent.list_submissions(status=["pending", "running"])
                if self.agent.submissions.store.messages(s.submission_id)[0] == self.id]

    async def abort(self, operation_id: str | None = None) -> bool:
        """Stop an operation (default: the session's running turn); True if something stopped."""
        if operation_id is not None:
            return await self.agent.cancel_submission(operation_id) == "cancelled"
        active = self.agent.active_turn
        return active is not None and active.session_id == self.id and self.agent.cancel_chat(active.request_id)

    async def add_tool_result(self, tool_call_id: str, output: Any = None, *, error: str | None = None,
                              source: Literal["server", "client"] = "server",
                              auto_continue: bool = True) -> ToolAnswer | Unanswered:
        """Answer a call of this session that waits for its output. A client's answer
        (`source="client"`) is checked like the browser's (`think.turns.trust.check_result`): one
        for a server tool's call, or a call that does not wait, is `Unanswered("not_client_tool")`.
        With `auto_continue`, the turn carries on once every call of the batch has its answer (in
        a session other than the root, before this returns: `ToolAnswer.continuation`)."""
        if source == "server":
            return await self.agent.add_tool_result(tool_call_id, output, error=error, auto_continue=auto_continue,
                                                    session=self.id)
        try:
            message = await self.agent.tool_updates.client_result(
                tool_call_id, lambda: client_tool_kinds(self.agent, None, self.id), output=output, error_text=error,
                is_error=error is not None, session=self.id)
        except Refused as refused:
            return Unanswered("unanswered", "not_client_tool", str(refused))
        return await self._continue(message, auto_continue)

    async def approve_tool_call(self, tool_call_id: str, approved: bool, reason: str | None = None, *,
                                source: Literal["server", "client"] = "server",
                                auto_continue: bool = True) -> ToolAnswer | Unanswered:
        """Answer a call of this session that asks for approval (`tool_approval`, a tool's
        `needs_approval`): approved, it runs at the start of the continuation. A client's answer
        is taken only for a call that asks (`think.turns.trust.check_approval`)."""
        if source == "server":
            return await self.agent.approve_tool_call(tool_call_id, approved, reason, auto_continue=auto_continue,
                                                      session=self.id)
        try:
            message = await self.agent.tool_updates.client_approval(tool_call_id, approved, session=self.id)
        except Refused as refused:
            return Unanswered("unanswered", "not_client_tool", str(refused))
        return await self._continue(message, auto_continue)

    async def _continue(self, message: Message | None, auto_continue: bool) -> ToolAnswer:
        if self.id:
            return await continue_session(self.agent, self.id, message, auto_continue)
        return await self.agent.continuations.after_answer(message, auto_continue)

    # ---- blocking turns ----------------------------------------------------------------------

    async def prompt(self, input: TurnInput) -> Prompted:
        """Run a turn and wait for it: the answer's text and the messages after it."""
        result = await self.agent.run_turn("wait", input=input, session=self.id)
        assert isinstance(result, TurnResult)
        text = result.message.text if result.message is not None else ""
        return Prompted(text, tuple(self.messages()), result)

    async def chat(self, input: TurnInput, callback: object | None = None) -> TurnResult:
        """Run a turn and stream it to `callback` (see `Think.chat`)."""
        return await self.agent.chat(input, callback, session=self.id)

    async def regenerate(self, message_id: str | None = None) -> TurnResult:
        return await self.agent.regenerate(message_id, session=self.id)

    async def continue_(self) -> TurnResult:
        """Continue the newest reply (`continue` is a keyword in Python)."""
        return await self.agent.continue_last_turn(session=self.id)

    async def reset(self, handoff: str | None = None) -> None:
        """Clear the session; with `handoff`, leave it as a system note for the next turn."""
        if self.id == "":
            await self.agent.clear_messages()
        else:
            for sub in self.pending():
                await self.agent.cancel_submission(sub.submission_id, "The session was reset")
            active = self.agent.active_turn
            if active is not None and active.session_id == self.id:
                self.agent.cancel_chat(active.request_id)
            self.session.clear()
            self.agent.session_streams.forget(self.id)
            await self.session.fanout.publish(TranscriptChanged(()))
        if handoff:
            self.session.save([Message(id=f"handoff-{uuid.uuid4().hex[:12]}", role="system",
                                       parts=[TextPart(text=handoff)])])

    # ---- reading -----------------------------------------------------------------------------

    def messages(self) -> list[Message]:
        return list(self.session.history())

    def branches(self, message_id: str) -> list[Message]:
        return self.session.get_branches(message_id)

    def search(self, q: str, limit: int = 10) -> list[SearchResult]:
        return self.session.search(q, limit=limit)

    async def compact(self) -> Any:
        return await self.session.compact()

    def in_flight(self) -> InFlight | None:
        """The running operation and its chunks so far; after a crash, the stream it left
        (`orphaned`; buffered in storage: the root session's by `think.stream.resumable`, the
        others' by `think.stream.session_streams`, until the session's next turn or a reset)."""
        streams = self.agent.streams
        if self.id == "":
            if streams.live is not None:
                return InFlight(streams.live.request_id, _chunks(self.agent, streams.live.request_id))
            if streams.orphan is not None:
                return InFlight(streams.orphan.request_id, _chunks(self.agent, streams.orphan.request_id), True)
            return None
        current = self.agent.session_streams.current(self.id)
        return None if current is None else InFlight(current.request_id, current.chunks, current.orphaned)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with each event of this session: `chunk`, `message` (a reply stored),
        `run-start`, `run-end`, `error`, `transcript`, `reset`, and `operation` (an operation of
        this session changed status: `operationId`, `status`, `error`). Returns the unsubscribe
        function."""

        async def deliver(out: JSONObject) -> None:
            result = listener(out)
            if inspect.isawaitable(result):
                await result

        async def on_event(event: TurnEvent) -> None:
            for out in _events(event):
                await deliver(out)

        async def on_status(submission: Submission) -> None:
            if self.agent.submissions.store.messages(submission.submission_id)[0] == self.id:
                await deliver({"type": "operation", "operationId": submission.submission_id,
                               "status": submission.status, "error": submission.error})

        stops = (self.session.fanout.subscribe(on_event), self.agent.submissions.watch(on_status))

        def unsubscribe() -> None:
            for stop in stops:
                stop()

        return unsubscribe

    def _reply_to(self, operation_id: str) -> Message | None:
        _, asked = self.agent.submissions.store.messages(operation_id)
        history = self.session.history()
        last = asked[-1].id if asked else None
        position = next((i for i, m in enumerate(history) if m.id == last), None)
        if position is None:
            return None
        after = history[position + 1:]
        replies = [m for m in after[: next((i for i, m in enumerate(after) if m.role == "user"), len(after))]
                   if m.role == "assistant"]
        return replies[-1] if replies else None


def _chunks(agent: Think, request_id: str) -> tuple[JSONObject, ...]:
    return tuple(orjson.loads(body) for _, body in agent.streams.chunks(request_id))


def _events(event: TurnEvent) -> list[JSONObject]:
    match event:
        case ChunkEvent(request_id=rid, chunk=chunk):
            return [{"type": "chunk", "requestId": rid, "chunk": chunk}]
        case TurnStarted(request_id=rid):
            return [{"type": "run-start", "requestId": rid}]
        case TurnFailed(request_id=rid, error=text):
            return [{"type": "error", "requestId": rid, "error": text}]
        case TurnFinished(request_id=rid, outcome=outcome, message=message):
            out: list[JSONObject] = []
            if message is not None:
                out.append({"type": "message", "requestId": rid, "message": message.to_json()})
            out.append({"type": "run-end", "requestId": rid, "outcome": outcome})
            return out
        case TranscriptChanged(messages=messages):
            if not messages:
                return [{"type": "reset"}]
            return [{"type": "transcript", "messages": [m.to_json() for m in messages]}]
    return []
