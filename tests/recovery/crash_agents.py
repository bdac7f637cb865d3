"""The agent the crash loop serves in a subprocess (`tests.recovery.crash_app:app`).

`Crashy` answers a question in two steps: "Let me check. " and a call of the `record` tool (which
logs `start <call id>` / `end <call id>` to `THINK_TEST_TOOLS` around a short sleep), then a slow
answer `Answer to <q>: w0 … w15 END.`, a word every 30 ms. Continuing a cut answer it streams only
the words still missing, as a model given the partial would.

`Jobs` takes questions as durable submissions and calls a `rerun` tool (`fetch`) beside `record`;
`Asker` calls its own client tool `ask_user` beside `record`. While the file `THINK_TEST_GATE`
names exists, `record` and `fetch` hold after logging their start; while `THINK_TEST_ANSWER_GATE`
names one, the answer holds before the word `w<THINK_TEST_HOLD_AT>` (logging `hold <question>`):
a test kills them mid-run.

`Boss` hands every question to a `Crashy` child (an agent tool) and answers `Summary: <its
answer>`. `THINK_TEST_WAKE_AFTER` sets the keep-alive alarm's horizon (seconds).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from think import Think, agent_tool, callable, client_tool, tool
from think.models.base import (
    CONTINUE_PROMPT,
    AssistantMessage,
    ModelRequest,
    TextContent,
    ToolCallContent,
    ToolMessage,
    UserMessage,
)
from think.models.events import Finish, StreamEvent, TextDelta, ToolCallReady, ToolCallStart
from think.recovery import ChatRecoveryPolicy
from think.testing.models import Reply, ScriptedModel, call
from think.tools.tool import ToolContext

PREFACE = "Let me check. "
CONTINUING = (TextContent(CONTINUE_PROMPT),)


def answer(question: str) -> str:
    return f"Answer to {question}: " + " ".join(f"w{k}" for k in range(16)) + " END."


def _log(line: str) -> None:
    path = os.environ.get("THINK_TEST_TOOLS")
    if path:
        with Path(path).open("a") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())


async def _held(variable: str = "THINK_TEST_GATE", note: str = "") -> None:
    """While the file `variable` names exists, hold (a test kills the process meanwhile); `note`
    is logged first when it does hold."""
    gate = os.environ.get(variable)
    if note and gate and await anyio.Path(gate).exists():
        _log(note)
    while gate and await anyio.Path(gate).exists():  # noqa: ASYNC110 - the test process removes the file
        await anyio.sleep(0.01)


@tool
async def record(ctx: ToolContext, query: str) -> str:
    """Look something up (slowly)."""
    _log(f"start {ctx.tool_call_id}")
    await _held()
    await anyio.sleep(0.15)
    _log(f"end {ctx.tool_call_id}")
    return f"noted {query}"


@tool(recovery="rerun")
async def fetch(ctx: ToolContext, query: str) -> str:
    """Fetch a page (read-only: safe to run again after a crash)."""
    _log(f"start {ctx.tool_call_id} fetch")
    await _held()
    _log(f"end {ctx.tool_call_id} fetch")
    return f"fetched {query}"


ask_user = client_tool("ask_user", description="Ask the person at the browser.",
                       input_schema={"type": "object", "properties": {"query": {"type": "string"}}})
"""Declared among an agent's own tools (no `execute`): the browser answers it."""


class CrashModel:
    """Calls `tools` (in one step, in this order) with the question, then answers it."""

    model_id = "crash"

    def __init__(self, tools: tuple[str, ...] = ("record",)) -> None:
        self.tools = tools

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        # The continue prompt of a recovered reply is not the user's: the partial is what counts.
        messages = [m for m in request.messages if not (isinstance(m, UserMessage) and m.content == CONTINUING)]
        last_user = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=-1)
        question = "".join(c.text for c in messages[last_user].content if isinstance(c, TextContent)) \
            if last_user >= 0 else ""
        after = messages[last_user + 1:]
        said = "".join(c.text for m in after if isinstance(m, AssistantMessage)
                       for c in m.content if isinstance(c, TextContent))
        called = any(isinstance(c, ToolCallContent) for m in after if isinstance(m, AssistantMessage)
                     for c in m.content)
        if not called and not any(isinstance(m, ToolMessage) for m in after):
            if PREFACE.strip() not in said:
                yield TextDelta(PREFACE)
            for name in self.tools:
                call_id = f"call-{os.urandom(4).hex()}"
                yield ToolCallStart(call_id, name)
                yield ToolCallReady(call_id, name, json.dumps({"query": question}))
            yield Finish("tool-calls")
            return
        full = answer(question)
        at = said.find("Answer to")
        done = said[at:] if at >= 0 else ""
        rest = full[len(done):] if full.startswith(done) else full
        hold = f"w{os.environ.get('THINK_TEST_HOLD_AT', '')}"
        for word in rest.split(" "):
            if word == hold:
                await _held("THINK_TEST_ANSWER_GATE", f"hold {question}")  # mid-answer, while that file exists
            await anyio.sleep(0.03)
            yield TextDelta(word + " " if not word.endswith(".") else word)
        yield Finish("stop")


class Crashy(Think):
    chat_recovery = ChatRecoveryPolicy(wake_after=float(os.environ.get("THINK_TEST_WAKE_AFTER", "10")),
                                       backoff=float(os.environ.get("THINK_TEST_BACKOFF", "0.5")))

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.model = CrashModel()

    def get_model(self) -> CrashModel:
        return self.model

    def get_tools(self) -> list:  # type: ignore[type-arg]
        return [record]


def _boss(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        result = last.results[0]
        return f"Summary: {result.output}" if not result.is_error else f"Failed: {result.output}"
    return call("crashy", prompt=request.last_user_text)


class Boss(Think):
    chat_recovery = Crashy.chat_recovery

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(_boss)

    def get_tools(self) -> list:  # type: ignore[type-arg]
        return [agent_tool(Crashy, description="Look into a question.")]


class Jobs(Crashy):
    """Takes questions as durable submissions (`submit`, an RPC method); each calls `fetch` (rerun
    on recovery) and `record` (reported) in one step."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.model = CrashModel(("fetch", "record"))

    def get_tools(self) -> list:  # type: ignore[type-arg]
        return [fetch, record]

    @callable
    async def submit(self, question: str) -> str:
        accepted = await self.submit_messages([question], idempotency_key=question)
        return accepted.submission_id


class Asker(Crashy):
    """Asks the browser (`ask_user`, a client tool of its own) while `record` runs."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.model = CrashModel(("ask_user", "record"))

    def get_tools(self) -> list:  # type: ignore[type-arg]
        return [record, ask_user]
