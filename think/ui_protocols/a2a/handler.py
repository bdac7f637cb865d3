"""`TaskHandler`: the A2A request handler of one agent class, over submissions and turns.

The SDK's JSON-RPC dispatcher parses and answers the requests; this answers the methods:

* `SendMessage` / `SendStreamingMessage` without a `taskId`: the message is submitted durably
  (`submit_messages`, the task id its submission id, the client's `messageId` its idempotency
  key: a resent message is the same task) to the instance `contextId` names (a new one without);
  the stream is the task, WORKING when its turn starts, the answer's text as `answer` artifact
  chunks, then the final status;
* with the `taskId` of a task in INPUT_REQUIRED: its answers (`messages.answers_in`) are handed to
  the agent's chat channel as a WebSocket tab's `cf_agent_tool_approval` / `cf_agent_tool_result`
  (`think.ui_protocols.turn_feed`), judged by `think.turns.trust`; the continuation they ask for
  carries the task on;
* `GetTask`, `ListTasks` (of one `contextId`), `CancelTask` (a queued or running submission is
  cancelled, a running continuation stopped, a waiting task's approvals denied), `SubscribeToTask`
  (the task, then its running turn live).

Push notifications and the extended card are not offered. What the endpoint decided about the
request (its instance, after `on_before_connect`) arrives in the call context's state.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types.a2a_pb2 import (
    AgentCard,
    Artifact,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Part,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.types.a2a_pb2 import (
    Message as A2AMessage,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
)

from think.agent import Think
from think.server.agents import AgentRegistry
from think.stream.fanout import ChunkEvent, TurnFinished, TurnStarted
from think.submissions.store import Submission
from think.turns.trust import Refused
from think.ui_protocols.a2a.messages import Approval, Result, answers_in, from_a2a
from think.ui_protocols.a2a.tasks import (
    ANSWER,
    TERMINAL,
    TaskRecord,
    build_task,
    new_task_id,
    task_messages,
    task_state,
    waiting,
)
from think.ui_protocols.turn_feed import TurnFeed

INSTANCE = "think.instance"
"""The call context's state key of the instance the request is for (set by the endpoint)."""
CHECK_EVERY = 1.0
"""Seconds between looks at a queued submission a stream waits for (it may be cancelled unseen)."""
_OUTCOME = {"error": TaskState.TASK_STATE_FAILED, "aborted": TaskState.TASK_STATE_CANCELED,
            "skipped": TaskState.TASK_STATE_CANCELED}


class TaskHandler(RequestHandler):
    """A2A over the instances of `cls` (see the module docstring)."""

    def __init__(self, cls: type[Think], registry: AgentRegistry) -> None:
        self.cls = cls
        self.registry = registry

    @staticmethod
    def _instance(context: ServerCallContext) -> str:
        name = context.state.get(INSTANCE)
        if not isinstance(name, str):
            raise TaskNotFoundError
        return name

    # ---- messages --------------------------------------------------------------------------------

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | A2AMessage:
        name = self._instance(context)
        message = params.message
        async with self.registry.use(self.cls, name) as host, _feed(host) as feed:
            if message.task_id:
                submission, request_id = await self._answer(feed, message)
            else:
                submission = await self._submit(feed.agent, name, message)
                request_id = submission.submission_id
            if not params.configuration.return_immediately and request_id is not None:
                async for _ in self._follow(feed, submission, request_id):
                    pass
            return self._task(feed.agent, submission.submission_id, params.configuration.history_length)

    async def on_message_send_stream(self, params: SendMessageRequest,
                                     context: ServerCallContext) -> AsyncGenerator[Event]:
        name = self._instance(context)
        message = params.message
        async with self.registry.use(self.cls, name) as host, _feed(host) as feed:
            if message.task_id:
                submission, request_id = await self._answer(feed, message)
            else:
                submission = await self._submit(feed.agent, name, message)
                request_id = None if submission.done else submission.submission_id
            yield self._task(feed.agent, submission.submission_id, params.configuration.history_length)
            if request_id is not None:
                async for event in self._follow(feed, submission, request_id):
                    yield event
                yield self._final(feed.agent, submission.submission_id)

    async def _submit(self, agent: Think, name: str, message: A2AMessage) -> Submission:
        try:
            ours = from_a2a(message)
        except Refused as exc:
            raise InvalidParamsError(message=str(exc)) from None
        if not ours.parts:
            raise InvalidParamsError(message="the message has no text, file or data part")
        key = f"a2a:{message.message_id}" if message.message_id else None
        if key is not None and (known := agent.submissions.store.by_key(key)) is not None:
            return known  # the same message again: the same task
        return await agent.submit_messages(ours, submission_id=new_task_id(name), idempotency_key=key,
                                           metadata={"a2a": {"contextId": name}})

    async def _answer(self, feed: TurnFeed, message: A2AMessage) -> tuple[Submission, str | None]:
        """A reply to a waiting task: its answers handed to the channel; the submission and the
        continuation to follow (None while other calls of the batch still wait)."""
        agent = feed.agent
        submission = agent.inspect_submission(message.task_id)
        if submission is None:
            raise TaskNotFoundError
        record = TaskRecord.load(agent, submission.submission_id)
        messages = task_messages(agent, submission)
        state, _ = task_state(agent, submission, record, messages)
        if state != TaskState.TASK_STATE_INPUT_REQUIRED:
            raise InvalidParamsError(message=f"task {submission.submission_id!r} is {TaskState.Name(state)}, "
                                             "not waiting for input; send a message without taskId")
        answers = answers_in(message)
        if not answers:
            raise InvalidParamsError(message="this task waits for an approval or a tool result: answer with a data "
                                             "part {\"approved\": true|false} (or the text yes / no), or "
                                             "{\"toolCallId\": …, \"output\": …}")
        last = messages[-1]
        try:
            for answer in answers:
                if isinstance(answer, Approval):
                    calls = [answer.tool_call_id] if answer.tool_call_id else [
                        p.tool_call_id for p in last.tool_parts if p.state == "approval-requested"]
                    for call_id in calls:
                        await feed.send_approval(call_id, answer.approved)
                elif isinstance(answer, Result):
                    part = next((p for p in last.tool_parts if p.tool_call_id == answer.tool_call_id), None)
                    await feed.send_result(answer.tool_call_id, part.name if part is not None else "",
                                           answer.output, error=answer.error)
        except Refused as exc:
            raise InvalidParamsError(message=str(exc)) from None
        request_id = feed.continuation()
        if request_id is not None:
            record.turns.append(request_id)
            record.save(agent, submission.submission_id)
        return submission, request_id

    # ---- following a turn ------------------------------------------------------------------------

    async def _follow(self, feed: TurnFeed, submission: Submission,
                      request_id: str) -> AsyncGenerator[TaskStatusUpdateEvent | TaskArtifactUpdateEvent]:
        """Status and artifact updates of turn `request_id` of the task, until it has finished (or
        the submission ended without it: cancelled while queued)."""
        agent = feed.agent
        task_id = submission.submission_id
        context_id = task_id.rpartition("/")[0]
        started = False
        appended = False
        while True:
            event = await feed.next_event(CHECK_EVERY)
            if event is None:
                if started:
                    continue
                if request_id == task_id:  # the submission's turn: until the submission has ended
                    current = agent.inspect_submission(task_id)
                    if current is None or current.done:
                        return
                elif not feed.may_start(request_id):  # a continuation that was dropped
                    return
                continue
            if isinstance(event, TurnStarted) and event.request_id == request_id:
                started = True
                yield TaskStatusUpdateEvent(task_id=task_id, context_id=context_id,
                                            status=TaskStatus(state=TaskState.TASK_STATE_WORKING))
            elif isinstance(event, ChunkEvent) and event.request_id == request_id:
                if event.chunk.get("type") == "text-delta" and (delta := str(event.chunk.get("delta") or "")):
                    yield TaskArtifactUpdateEvent(task_id=task_id, context_id=context_id, append=appended,
                                                  artifact=Artifact(artifact_id=ANSWER, name=ANSWER,
                                                                    parts=[Part(text=delta)]))
                    appended = True
            elif isinstance(event, TurnFinished) and event.request_id == request_id:
                return

    def _final(self, agent: Think, task_id: str) -> TaskStatusUpdateEvent:
        task = self._task(agent, task_id, None)
        return TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)

    def _task(self, agent: Think, task_id: str, history_length: int | None) -> Task:
        submission = agent.inspect_submission(task_id)
        if submission is None:
            raise TaskNotFoundError
        state: tuple[int, str | None] | None = None
        if submission.status == "running" and (outcome := _settled_outcome(agent, submission)) is not None:
            state = outcome  # its turn has finished; the ledger is settled a moment later
        return build_task(agent, submission, history_length=history_length or None, state=state)

    # ---- tasks -----------------------------------------------------------------------------------

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        name = self._instance(context)
        async with self.registry.runtime.lease(self.cls, name) as agent:
            assert isinstance(agent, Think)
            return self._task(agent, params.id, params.history_length)

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        if not params.context_id:
            raise InvalidParamsError(message="ListTasks needs a contextId (tasks are listed per conversation)")
        name = self._instance(context)
        async with self.registry.runtime.lease(self.cls, name) as agent:
            assert isinstance(agent, Think)
            mine = [s for s in agent.list_submissions() if s.submission_id.startswith(f"{name}/")]
            tasks = [self._task(agent, s.submission_id, params.history_length) for s in mine]
            if params.status:
                tasks = [t for t in tasks if t.status.state == params.status]
            if params.page_size:
                tasks = tasks[:params.page_size]
            return ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(tasks))

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        name = self._instance(context)
        async with self.registry.use(self.cls, name) as host, _feed(host) as feed:
            agent = feed.agent
            submission = agent.inspect_submission(params.id)
            if submission is None:
                raise TaskNotFoundError
            record = TaskRecord.load(agent, params.id)
            messages = task_messages(agent, submission)
            state, _ = task_state(agent, submission, record, messages)
            if state in TERMINAL:
                raise TaskNotCancelableError(message=f"task {params.id!r} is {TaskState.Name(state)}")
            if not submission.done:
                await agent.submissions.cancel(params.id, "Canceled by the A2A client")
                await agent.wait_for_submission(params.id, timeout=30)
            elif record.turns and agent.cancel_chat(record.turns[-1]):
                async for _ in self._follow(feed, submission, record.turns[-1]):
                    pass
            elif waiting(agent, messages):
                for part in messages[-1].tool_parts:
                    if part.state == "approval-requested":
                        await feed.send_approval(part.tool_call_id, False, auto_continue=False)
            record = TaskRecord.load(agent, params.id)
            record.canceled = True
            record.save(agent, params.id)
            return self._task(agent, params.id, None)

    async def on_subscribe_to_task(self, params: SubscribeToTaskRequest,
                                   context: ServerCallContext) -> AsyncGenerator[Event]:
        name = self._instance(context)
        async with self.registry.use(self.cls, name) as host, _feed(host) as feed:
            agent = feed.agent
            task = self._task(agent, params.id, None)
            yield task
            if task.status.state not in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING):
                return
            submission = agent.inspect_submission(params.id)
            assert submission is not None
            record = TaskRecord.load(agent, params.id)
            live = agent.streams.live
            if submission.status == "running" and live is not None:
                request_id = live.request_id  # turns run one at a time: the live one is the task's
            elif submission.status == "pending":
                request_id = params.id
            elif record.turns:
                request_id = record.turns[-1]
            else:
                return
            async for event in self._follow(feed, submission, request_id):
                yield event
            yield self._final(agent, params.id)

    # ---- not offered -----------------------------------------------------------------------------

    async def on_create_task_push_notification_config(self, params: TaskPushNotificationConfig,
                                                      context: ServerCallContext) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(self, params: GetTaskPushNotificationConfigRequest,
                                                   context: ServerCallContext) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
            self, params: ListTaskPushNotificationConfigsRequest,
            context: ServerCallContext) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(self, params: DeleteTaskPushNotificationConfigRequest,
                                                      context: ServerCallContext) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(self, params: GetExtendedAgentCardRequest,
                                         context: ServerCallContext) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError


def _settled_outcome(agent: Think, submission: Submission) -> tuple[int, str | None] | None:
    """For a submission still marked running: the state its finished turn gives it, if it has
    finished (its stream's record says so), else None."""
    info = agent.streams.get(submission.submission_id)
    if info is None or info.status == "streaming":
        return None
    if info.status in _OUTCOME:
        return _OUTCOME[info.status], None
    messages = task_messages(agent, submission)
    if waiting(agent, messages):
        return TaskState.TASK_STATE_INPUT_REQUIRED, None
    return TaskState.TASK_STATE_COMPLETED, None


class _feed:
    """`TurnFeed(host)` as an async context manager."""

    def __init__(self, host: Any) -> None:
        self.feed = TurnFeed(host)

    async def __aenter__(self) -> TurnFeed:
        return self.feed

    async def __aexit__(self, *exc: object) -> None:
        self.feed.close()
