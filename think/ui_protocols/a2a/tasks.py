"""A2A tasks as views of an agent's durable state: a task is a submission and what followed it.

    context id   = the agent instance (`/agents/<agent>/<contextId>`): one conversation
    task id      = `<contextId>/<uuid>` = the submission id of the message that opened the task
    task state   = from the submission's status, the turns that carried it on and its reply:

        pending → SUBMITTED    running → WORKING    error → FAILED    aborted, skipped → CANCELED
        completed → the last turn that carried the task on (an approved call's continuation):
                    streaming → WORKING, error → FAILED, aborted → CANCELED; then
                    INPUT_REQUIRED while the reply waits for an approval or a client tool's
                    result, else COMPLETED

The turns that carried a task on after its submission (answers to `input-required`) and a cancel
while it waited are kept in the agent's key-value store (`think.a2a.task.<id>`), so all of this
reads back the same after a restart. The task's history is its user message and the replies after
it (up to the next user message); its one artifact, `answer`, is the replies' text.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from a2a.types.a2a_pb2 import Artifact, Part, Task, TaskState, TaskStatus

from think.agent import Think
from think.messages import Message
from think.submissions.store import Submission
from think.tools.tool import waits_for_answer
from think.turns.trust import agent_tools
from think.ui_protocols.a2a.messages import to_a2a

RECORD_KEY = "think.a2a.task."
ANSWER = "answer"
"""The artifact id of a task's answer."""
_OF_SUBMISSION = {"pending": TaskState.TASK_STATE_SUBMITTED, "running": TaskState.TASK_STATE_WORKING,
                  "error": TaskState.TASK_STATE_FAILED, "aborted": TaskState.TASK_STATE_CANCELED,
                  "skipped": TaskState.TASK_STATE_CANCELED}
_OF_STREAM = {"streaming": TaskState.TASK_STATE_WORKING, "error": TaskState.TASK_STATE_FAILED,
              "aborted": TaskState.TASK_STATE_CANCELED, "orphaned": TaskState.TASK_STATE_WORKING}
TERMINAL = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED,
                      TaskState.TASK_STATE_REJECTED})


def new_task_id(context_id: str) -> str:
    return f"{context_id}/{uuid.uuid4()}"


def context_of(task_id: str) -> str | None:
    """The context (instance name) a task id names, or None for an id that is not one of ours."""
    context, slash, rest = task_id.rpartition("/")
    return context if slash and context and rest else None


@dataclass
class TaskRecord:
    """What a task adds to its submission (stored in the agent's key-value store)."""

    turns: list[str] = field(default_factory=list)
    """Request ids of the turns that carried the task on after its submission, oldest first."""
    canceled: bool = False

    @classmethod
    def load(cls, agent: Think, task_id: str) -> TaskRecord:
        raw = agent.kv_get(RECORD_KEY + task_id)
        if not isinstance(raw, dict):
            return cls()
        turns = raw.get("turns")
        return cls(turns=[str(t) for t in turns] if isinstance(turns, list) else [],
                   canceled=bool(raw.get("canceled")))

    def save(self, agent: Think, task_id: str) -> None:
        agent.kv_set(RECORD_KEY + task_id, {"turns": self.turns, "canceled": self.canceled})


def task_messages(agent: Think, submission: Submission) -> list[Message]:
    """The task's user message and the replies after it, from the active transcript."""
    history = agent.session.history()
    ids = set(submission.message_ids)
    start = next((i for i, m in enumerate(history) if m.id in ids), None)
    if start is None:
        return []
    out = [history[start]]
    for message in history[start + 1:]:
        if message.role == "user":
            break
        out.append(message)
    return out


def waiting(agent: Think, messages: list[Message]) -> bool:
    """Does the task's last reply wait for a person or a client?"""
    last = messages[-1] if messages else None
    if last is None or last.role != "assistant":
        return False
    try:
        tools = agent_tools(agent)
    except Exception:  # a get_tools() that raises: only approvals can be told apart
        tools = {}
    return waits_for_answer(last, tools)


def task_state(agent: Think, submission: Submission, record: TaskRecord,
               messages: list[Message]) -> tuple[int, str | None]:
    """The task's state (see the module docstring) and the error text of a failed one."""
    if record.canceled:
        return TaskState.TASK_STATE_CANCELED, None
    if submission.status != "completed":
        return _OF_SUBMISSION[submission.status], submission.error
    if record.turns:
        last = record.turns[-1]
        info = agent.streams.get(last)
        running = agent.continuations.running
        pending = agent.continuations.pending
        if info is None and any(c is not None and c.request_id == last for c in (running, pending)):
            return TaskState.TASK_STATE_WORKING, None
        if info is not None and info.status in _OF_STREAM:
            terminal = agent.streams.terminal
            error = terminal.body if terminal is not None and terminal.request_id == last else None
            return _OF_STREAM[info.status], error
    if waiting(agent, messages):
        return TaskState.TASK_STATE_INPUT_REQUIRED, None
    return TaskState.TASK_STATE_COMPLETED, None


def answer_text(messages: list[Message]) -> str:
    return "\n\n".join(m.text for m in messages[1:] if m.role == "assistant" and m.text)


def build_task(agent: Think, submission: Submission, *, history_length: int | None = None,
               state: tuple[int, str | None] | None = None) -> Task:
    """The A2A `Task` of a submission as it is now (`state` overrides the computed one)."""
    task_id = submission.submission_id
    context_id = context_of(task_id) or agent.name
    record = TaskRecord.load(agent, task_id)
    messages = task_messages(agent, submission)
    value, error = state if state is not None else task_state(agent, submission, record, messages)
    status = TaskStatus(state=value)  # type: ignore[arg-type]
    status.timestamp.GetCurrentTime()
    replies = [m for m in messages[1:] if m.role == "assistant"]
    if error is not None:
        status.message.CopyFrom(to_a2a(Message(id=f"{task_id}/error", role="assistant"), context_id=context_id,
                                       task_id=task_id))
        status.message.parts.append(Part(text=error))
    elif replies:
        status.message.CopyFrom(to_a2a(replies[-1], context_id=context_id, task_id=task_id))
    task = Task(id=task_id, context_id=context_id, status=status)
    text = answer_text(messages)
    if text:
        task.artifacts.append(Artifact(artifact_id=ANSWER, name=ANSWER, parts=[Part(text=text)]))
    shown = messages[-history_length:] if history_length else messages  # 0 or unset: all of it
    task.history.extend(to_a2a(m, context_id=context_id, task_id=task_id) for m in shown)
    return task
