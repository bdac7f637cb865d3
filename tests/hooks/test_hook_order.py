"""Every lifecycle hook, in the original's order, with its context fields, on every turn entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from tests.chat.live_server import serve_in_thread
from think import (
    ChatErrorContext,
    StepConfig,
    StepContext,
    StepRecord,
    Think,
    ToolCallContext,
    ToolCallResultContext,
    ToolContext,
    ToolDecision,
    TurnConfig,
    TurnContext,
    TurnResult,
    open_agent,
    tool,
)
from think.client import AgentClient
from think.messages import JSONObject
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.stream.fanout import TurnEvent, TurnFinished
from think.testing.models import HANG, ScriptedModel, call, error, reasoning, text
from think.turns.callbacks import ChatCallback


@tool
def add(ctx: ToolContext, a: int, b: int) -> int:
    """Add two integers."""
    ctx.agent.log.append(("execute", {"a": a, "b": b}))
    return a + b


class Recorder(Think):
    """Records every hook call as `(name, detail)`; a two-step tool turn per user message."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.log: list[tuple[str, Any]] = []
        self.contexts: dict[str, list[Any]] = {}
        self.model = ScriptedModel(lambda request: [reasoning("Sum it."), call("add", a=2, b=3, id="c1")]
                                   if request.messages[-1].role == "user" else [text("It is 5.")])
        self.finished_before_response: list[bool] = []
        self.fanout.subscribe(self._watch)

    async def _watch(self, event: TurnEvent) -> None:
        if isinstance(event, TurnFinished):
            self.log.append(("turn-finished", event.request_id))

    def _record(self, name: str, ctx: Any, detail: Any = None) -> None:
        self.log.append((name, detail))
        self.contexts.setdefault(name, []).append(ctx)

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> list[Any]:
        return [add]

    async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
        self._record("before_turn", ctx)
        return None

    async def before_step(self, ctx: StepContext) -> StepConfig | None:
        self._record("before_step", ctx, ctx.step_number)
        return None

    async def before_tool_call(self, ctx: ToolCallContext) -> ToolDecision | None:
        self._record("before_tool_call", ctx, ctx.call.name)
        return None

    async def after_tool_call(self, ctx: ToolCallResultContext) -> None:
        self._record("after_tool_call", ctx, ctx.call.name)

    async def on_step_finish(self, step: StepRecord) -> None:
        self._record("on_step_finish", step, step.step_number)

    async def on_chunk(self, chunk: JSONObject) -> None:
        self._record("on_chunk", chunk, chunk["type"])

    async def on_chat_response(self, result: TurnResult) -> None:
        self._record("on_chat_response", result, result.status)
        stored = [m.id for m in self.messages]
        self.finished_before_response.append(result.message is not None and result.message.id in stored)

    async def on_chat_error(self, error: BaseException, ctx: ChatErrorContext) -> BaseException | str | None:
        self._record("on_chat_error", ctx, ctx.stage)
        return None


def collapsed(log: list[tuple[str, Any]]) -> list[str]:
    """The hook names in order, a run of on_chunk calls shown once (tool execution marked)."""
    out: list[str] = []
    for name, detail in log:
        label = f"{name}({detail})" if name in ("before_step", "on_step_finish") else name
        if name == "on_chunk":
            if out and out[-1] == "on_chunk…":
                continue
            label = "on_chunk…"
        out.append(label)
    return out


async def test_a_two_step_tool_turn_runs_the_hooks_in_the_original_order(data_dir: Path) -> None:
    async with open_agent(Recorder, "order", data_dir=data_dir) as agent:
        result = await agent.save_messages(["What is 2 + 3?"], body={"from": "test"})
        assert result.status == "completed"
        names = collapsed([entry for entry in agent.log if entry[0] != "turn-finished"])
        # Reference §4.4, "observed order for a two-step tool turn".
        assert names == [
            "before_turn", "before_step(0)", "on_chunk…", "before_tool_call", "execute", "after_tool_call", "on_chunk…",
            "on_step_finish(0)", "before_step(1)", "on_chunk…", "on_step_finish(1)", "on_chat_response",
        ]
        assert [detail for name, detail in agent.log if name == "execute"] == [{"a": 2, "b": 3}]
        # The stream's done event, the persist and the broadcast come before on_chat_response.
        position = [name for name, _ in agent.log]
        assert position.index("turn-finished") < position.index("on_chat_response")
        assert agent.finished_before_response == [True]

        turn: TurnContext = agent.contexts["before_turn"][0]
        assert turn.continuation is False and turn.body == {"from": "test"}
        assert "add" in turn.tools and turn.model is agent.model and turn.system
        assert turn.messages[-1].role == "user" and turn.request_id == result.request_id

        first, second = agent.contexts["before_step"]
        assert (first.step_number, len(first.steps), second.step_number, len(second.steps)) == (0, 0, 1, 1)
        assert second.messages[-1].role == "tool" and first.model is agent.model

        before: ToolCallContext = agent.contexts["before_tool_call"][0]
        assert (before.call.id, before.call.name, before.call.input) == ("c1", "add", {"a": 2, "b": 3})
        assert before.step_number == 0 and before.request_id == result.request_id

        after: ToolCallResultContext = agent.contexts["after_tool_call"][0]
        assert after.success and after.output == 5 and after.error is None and after.duration >= 0
        assert after.call.input == {"a": 2, "b": 3}

        step0, step1 = agent.contexts["on_step_finish"]
        assert step0.reasoning == "Sum it." and step0.finish_reason == "tool-calls"
        assert [c.name for c in step0.tool_calls] == ["add"] and step0.tool_results[0].output == 5
        assert step0.usage is not None and step0.usage.input_tokens
        assert step1.text == "It is 5." and step1.finish_reason == "stop" and not step1.tool_calls

        chunk_types = {c["type"] for c in agent.contexts["on_chunk"]}
        assert chunk_types == {"reasoning-delta", "tool-input-start", "tool-input-delta", "tool-input-available",
                               "tool-output-available", "text-delta"}  # content only, no framing chunks

        response: TurnResult = agent.contexts["on_chat_response"][0]
        assert (response.request_id, response.status, response.continuation) == (result.request_id, "completed", False)
        assert response.message is not None and response.message.text == "It is 5."
        assert response.error is None and response.attachments == ()
        assert "on_chat_error" not in agent.contexts


async def test_hooks_run_for_every_turn_entry(data_dir: Path) -> None:
    async with open_agent(Recorder, "entries", data_dir=data_dir) as agent:
        await agent.save_messages(["one"])
        await agent.chat("two", ChatCallback())
        await agent.run_turn(input="three")
        await agent.run_turn("stream", input="four", callback=None)
        submitted = await agent.submit_messages(["five"])
        await agent.wait_for_submission(submitted.submission_id, timeout=10)
        await agent.continue_last_turn({"again": True})
        turns = agent.contexts["before_turn"]
        responses = agent.contexts["on_chat_response"]
        assert len(turns) == len(responses) == 6
        assert [t.continuation for t in turns] == [False] * 5 + [True]
        assert turns[-1].body == {"again": True}
        assert responses[4].request_id == submitted.submission_id
        assert all(r.status == "completed" for r in responses)


async def test_hooks_see_a_cancelled_turn_as_aborted(data_dir: Path) -> None:
    class Hanging(Recorder):
        def get_model(self) -> ScriptedModel:
            return ScriptedModel([[text("Partial "), HANG]])

    async with open_agent(Hanging, "cancel", data_dir=data_dir) as agent:
        signal = anyio.Event()
        seen = anyio.Event()
        results: list[TurnResult] = []

        async def on_event(chunk: str) -> None:
            if "text-delta" in chunk:
                seen.set()

        async with anyio.create_task_group() as tasks:
            async def run() -> None:
                results.append(await agent.chat("go", ChatCallback(on_event=on_event), signal=signal))

            tasks.start_soon(run)
            with anyio.fail_after(5):
                await seen.wait()
            signal.set()
        assert results[0].status == "aborted"
        response = agent.contexts["on_chat_response"][0]
        assert response.status == "aborted" and response.message is not None
        assert response.message.text == "Partial "


async def test_a_websocket_turn_runs_the_same_hooks_and_clients_see_on_chat_error_text(tmp_path: Path) -> None:
    class Served(Recorder):
        async def on_chat_error(self, error: BaseException, ctx: ChatErrorContext) -> BaseException | str | None:
            self._record("on_chat_error", ctx, ctx.stage)
            return "Please try again later."

    runtime = EmbeddedRuntime(tmp_path / "data", idle_timeout=60)
    with serve_in_thread(create_app([Served], runtime=runtime)) as server:
        async with AgentClient.connect(server.agent_url("served", "ws"), turn_timeout=10) as client:
            turn = await client.send_chat("What is 2 + 3?")
            await turn
            assert turn.outcome == "completed" and turn.message is not None and turn.message.text == "It is 5."
            agent = next(a for a in runtime.live() if isinstance(a, Served))
            assert collapsed([e for e in agent.log if e[0] not in ("turn-finished", "execute")])[0:2] == [
                "before_turn", "before_step(0)"]
            assert agent.log[-1][0] == "on_chat_response"
            agent.model = ScriptedModel([[text("Half "), error("upstream exploded", status=400)]])
            failed = await client.send_chat("again")
            await failed
            assert (failed.outcome, failed.error) == ("error", "Please try again later.")
            assert agent.contexts["on_chat_error"][0].stage == "stream"
