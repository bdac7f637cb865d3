"""A recovered answer is one message: the recovery's continuation streams into the partial reply
the crash cut short (its open text part closed, the continued text appended to it), on every
recovery path: chat turns, a crash during the recovery itself, interrupted tool continuations,
durable submissions, rerun tools."""

from __future__ import annotations

import time
from pathlib import Path

from tests.recovery.agents import RUNS, Recoverable, leave_interrupted, reset
from think import Message, open_agent
from think.messages import TextPart, ToolPart
from think.models.base import CONTINUE_PROMPT, AssistantMessage, TextContent, UserMessage
from think.recovery import Fiber
from think.stream.fanout import ChunkEvent
from think.testing.models import ScriptedModel

START = {"type": "start", "messageId": "m1"}
HEL = [START, {"type": "start-step"}, {"type": "text-start", "id": "t0"},
       {"type": "text-delta", "id": "t0", "delta": "Hel"}]


def no_part_streaming(messages: list[Message]) -> bool:
    return not any(getattr(p, "state", None) == "streaming" for m in messages for p in m.parts)


def text_of(message: Message) -> str:
    return "".join(p.text for p in message.parts if isinstance(p, TextPart))


async def test_the_continuation_streams_into_the_partial_reply(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel(["lo, world."]))
    user = await leave_interrupted(Recoverable, data_dir, HEL)
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        user_msg, reply = agent.messages  # one assistant message, under the partial's id
        assert (user_msg.id, reply.id, reply.role) == (user.id, "m1", "assistant")
        assert text_of(reply) == "Hello, world."
        # The interrupted text part is closed and the continuation's text appended to it.
        assert [p.to_json() for p in reply.parts] == [{"type": "step-start"},
                                                       {"type": "text", "text": "Hello, world.", "state": "done"}]
        assert no_part_streaming(agent.messages)
        # The model was asked to go on from where the partial stops; the prompt is not stored.
        [request] = Recoverable.model.requests
        assert request.messages[-2:] == (AssistantMessage((TextContent("Hel"),)),
                                         UserMessage((TextContent(CONTINUE_PROMPT),)))
        assert request.continuing == "Hel" and request.last_user_text == "Hello"
        assert CONTINUE_PROMPT not in [m.text for m in agent.messages]
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:  # as a reload reads it
        assert [m.id for m in agent.messages] == [user.id, "m1"] and text_of(agent.messages[1]) == "Hello, world."


async def test_a_crash_during_the_recovery_keeps_extending_the_same_message(data_dir: Path) -> None:
    """Killed again while the recovery's continuation streamed "lo": at the next start those
    chunks are folded into the same message, and the next attempt appends the rest to it."""
    reset(Recoverable, ScriptedModel([", world."]))
    # What the first recovery left when it died: the partial closed and stored, its own stream
    # (a continuation naming the message it extends) with "lo", and the handed-over fiber.
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        user = agent.session.save([Message.user("Hello")])[0]
        agent.session.save([Message.from_json({"id": "m1", "role": "assistant", "parts": [
            {"type": "step-start"}, {"type": "text", "text": "Hel", "state": "done"}]})])
        agent.streams.start("req-2", continuation=True, extends="m1")
        for seq, chunk in enumerate([{"type": "start"}, {"type": "start-step"}, {"type": "text-start", "id": "t1"},
                                     {"type": "text-delta", "id": "t1", "delta": "lo"}]):
            agent.streams.append(ChunkEvent("req-2", seq, chunk, True))
        assert agent.streams.live is not None
        agent.streams._flush(agent.streams.live)
        agent.streams.live = None
        t = time.time()
        agent.recovery.store.write(Fiber(
            request_id="req-2", root_request_id="req-1", session_id="", continuation=True, attempt=1,
            latest_user_id=user.id, last_body=None, client_tools=[], stash=None, incident_at=t, progress_at=t,
            work=1, created_at=t))
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        assert [m.id for m in agent.messages] == [user.id, "m1"]
        assert text_of(agent.messages[1]) == "Hello, world." and no_part_streaming(agent.messages)
        [request] = Recoverable.model.requests
        assert request.continuing == "Hello"
        assert [o.action for o in agent.recovery.outcomes] == ["continue"]


async def test_an_interrupted_tool_continuation_is_continued_in_its_own_message(data_dir: Path) -> None:
    """A continuation after a tool result (Think stores it as the message after the call) cut
    short: its partial is continued, not answered by a third message."""
    reset(Recoverable, ScriptedModel(["three."]))
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        agent.session.save([Message.user("Add 1 and 2")])
        agent.session.save([Message.from_json({"id": "call-msg", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "tool-add", "toolCallId": "c1", "state": "output-available", "input": {"a": 1, "b": 2},
             "output": 3}]})])
        agent.streams.start("cont-1", continuation=True)
        for seq, chunk in enumerate([{"type": "start"}, {"type": "start-step"}, {"type": "text-start", "id": "t"},
                                     {"type": "text-delta", "id": "t", "delta": "The sum is "}]):
            agent.streams.append(ChunkEvent("cont-1", seq, chunk, True))
        assert agent.streams.live is not None
        agent.streams._flush(agent.streams.live)
        agent.streams.live = None
        t = time.time()
        agent.recovery.store.write(Fiber(
            request_id="cont-1", root_request_id="cont-1", session_id="", continuation=True, attempt=0,
            latest_user_id=agent.messages[0].id, last_body=None, client_tools=[], stash=None, incident_at=t,
            progress_at=t, work=0, created_at=t))
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        _, call, answer = agent.messages
        assert call.id == "call-msg" and text_of(answer) == "The sum is three."
        assert no_part_streaming(agent.messages)


async def test_an_interrupted_submission_is_continued_in_the_same_message(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel(["lo, world."]))
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        question = Message.user("Hello")
        agent.submissions.store.insert("sub-1", [question], key=None, metadata=None, session_id="")
        assert agent.submissions.store.start("sub-1")
        agent.session.save([question])
        agent.streams.start("sub-1")
        for seq, chunk in enumerate(HEL):
            agent.streams.append(ChunkEvent("sub-1", seq, chunk))
        assert agent.streams.live is not None
        agent.streams._flush(agent.streams.live)
        agent.streams.live = None  # killed here: the submission row stays `running`
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        done = await agent.wait_for_submission("sub-1", timeout=5)
        assert done.status == "completed"
        user, reply = agent.messages
        assert (user.id, reply.id) == (question.id, "m1")
        assert text_of(reply) == "Hello, world." and no_part_streaming(agent.messages)


async def test_a_rerun_tool_of_the_partial_answers_in_the_same_message(data_dir: Path) -> None:
    reset(Recoverable, ScriptedModel(["Found it."]))
    chunks = [START, {"type": "start-step"}, {"type": "text-start", "id": "t0"},
              {"type": "text-delta", "id": "t0", "delta": "Looking. "}, {"type": "text-end", "id": "t0"},
              {"type": "tool-input-available", "toolCallId": "c3", "toolName": "lookup", "input": {"query": "x"}}]
    await leave_interrupted(Recoverable, data_dir, chunks)
    async with open_agent(Recoverable, "r", data_dir=data_dir) as agent:
        assert await agent.wait_until_stable(timeout=5)
        _, reply = agent.messages
        [part] = [p for p in reply.parts if isinstance(p, ToolPart)]
        assert (part.state, part.output) == ("output-available", "found x")
        assert text_of(reply) == "Looking. Found it." and RUNS == {"lookup": 1}
        # Text after a tool call is a step of its own: it is not joined to the text before the call.
        assert [p.type for p in reply.parts] == ["step-start", "text", "tool-lookup", "step-start", "text"]
