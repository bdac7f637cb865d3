"""Agents for the recovery tests: a scripted model shared per class, tools that count their runs."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from think import Think, open_agent, tool
from think.messages import JSONObject, Message
from think.recovery import ChatRecoveryPolicy, ExhaustedContext, Fiber, RecoveryContext, RecoveryDecision
from think.stream.fanout import ChunkEvent
from think.testing.models import ScriptedModel

RUNS: Counter[str] = Counter()


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    RUNS["add"] += 1
    return a + b


@tool
def charge(amount: int) -> str:
    """Charge a card (never re-run blindly)."""
    RUNS["charge"] += 1
    return f"charged {amount}"


@tool(recovery="rerun")
def lookup(query: str) -> str:
    """A read-only lookup (safe to run again)."""
    RUNS["lookup"] += 1
    return f"found {query}"


@tool(needs_approval=True)
def delete_all() -> str:
    """Delete everything (asks first)."""
    RUNS["delete_all"] += 1
    return "deleted"


class Recoverable(Think):
    """Recovers at once (no backoff); the script and the hook's answer are set per test."""

    chat_recovery = ChatRecoveryPolicy(backoff=0.0)
    model: ClassVar[ScriptedModel] = ScriptedModel([])
    decision: ClassVar[Any] = None
    contexts: ClassVar[list[RecoveryContext]] = []
    exhausted: ClassVar[list[ExhaustedContext]] = []

    def get_model(self) -> ScriptedModel:
        return type(self).model

    def get_tools(self) -> list:  # type: ignore[type-arg]
        return [add, charge, lookup, delete_all]

    async def on_chat_recovery(self, ctx: RecoveryContext) -> RecoveryDecision | dict[str, bool] | None:
        type(self).contexts.append(ctx)
        return type(self).decision

    async def on_exhausted(self, ctx: ExhaustedContext) -> None:
        type(self).exhausted.append(ctx)


def reset(cls: type[Recoverable], model: ScriptedModel, decision: Any = None) -> None:
    cls.model = model
    cls.decision = decision
    cls.contexts = []
    cls.exhausted = []
    RUNS.clear()


async def leave_interrupted(cls: type[Think], data_dir: Path, chunks: list[JSONObject], *,
                            request_id: str = "req-1", attempt: int = 0, stash: Any = None,
                            progress_age: float = 0.0, user: str = "Hello") -> Message:
    """The state a process killed mid-turn leaves: the user message, a `streaming` stream with
    `chunks`, and the turn's fiber. Returns the user message."""
    async with open_agent(cls, "r", data_dir=data_dir) as agent:
        message = agent.session.save([Message.user(user)])[0]
        agent.streams.start(request_id)
        for seq, chunk in enumerate(chunks):
            agent.streams.append(ChunkEvent(request_id, seq, chunk))
        assert agent.streams.live is not None
        agent.streams._flush(agent.streams.live)
        agent.streams.live = None  # the process dies here: nothing else is written
        t = time.time()
        agent.recovery.store.write(Fiber(
            request_id=request_id, root_request_id=request_id, session_id="", continuation=False,
            attempt=attempt, latest_user_id=message.id, last_body={"mood": "calm"}, client_tools=[],
            stash=stash, incident_at=t - progress_age, progress_at=t - progress_age, work=0, created_at=t))
    return message


def texts(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, "".join(getattr(p, "text", "") for p in m.parts)) for m in messages]
