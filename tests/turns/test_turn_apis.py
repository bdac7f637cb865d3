"""The programmatic turn APIs: chat() with a callback, run_turn(), signals, cancellation,
admission from inside a turn, pending interactions and waiting until the agent is stable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from think import ProtocolError, Submission, Think, TurnError, TurnResult, client_tool, open_agent, tool
from think.models.base import ModelRequest
from think.testing.models import HANG, Reply, ScriptedModel, call, error, text
from think.turns.callbacks import ChatCallback


def answer(request: ModelRequest) -> Reply:
    said = request.last_user_text
    if said.startswith("hang"):
        return [text("Thinking "), HANG]
    if said.startswith("fail"):
        return [error("the model is down", status=400)]
    if said.startswith("approve"):
        return [call("dangerous")] if request.messages[-1].role == "user" else "done"
    if said.startswith("browser"):
        return [call("ask_browser")]
    return f"Echo: {said}"


@tool(needs_approval=True)
def dangerous() -> str:
    """Needs a person's approval."""
    return "done"


class Chatty(Think):
    model = ScriptedModel(answer)

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> list[Any]:
        return [dangerous]


class Recorder:
    """A chat callback object (the original's StreamCallback) with async methods."""

    def __init__(self, agent: Think) -> None:
        self.agent = agent
        self.calls: list[tuple[str, Any]] = []
        self.stored_at_done: list[str] = []

    async def on_start(self, info: dict[str, Any]) -> None:
        self.calls.append(("start", info))

    async def on_event(self, chunk: str) -> None:
        self.calls.append(("event", orjson.loads(chunk)))

    async def on_done(self) -> None:
        self.calls.append(("done", None))
        self.stored_at_done = [m.role for m in self.agent.messages]

    async def on_error(self, message: str) -> None:
        self.calls.append(("error", message))


async def test_chat_streams_the_turn_to_the_callback(data_dir: Path) -> None:
    async with open_agent(Chatty, "chat", data_dir=data_dir) as agent:
        recorder = Recorder(agent)
        result = await agent.chat("Hello there", recorder, body={"k": 1}, metadata={"source": "parent"})
        kinds = [kind for kind, _ in recorder.calls]
        assert kinds[0] == "start" and kinds[-1] == "done" and set(kinds[1:-1]) == {"event"}
        assert recorder.calls[0][1] == {"requestId": result.request_id}
        events = [chunk for kind, chunk in recorder.calls if kind == "event"]
        assert events[0]["type"] == "start" and events[-1]["type"] == "finish"
        assert events[-1]["finishReason"] == "stop"
        assert events[-1]["messageMetadata"]["usage"]["outputTokens"] == 3  # a token per scripted word
        assert "".join(e["delta"] for e in events if e["type"] == "text-delta") == "Echo: Hello there"
        assert recorder.stored_at_done == ["user", "assistant"]  # on_done runs after the persist
        assert agent.messages[0].metadata == {"turnMetadata": {"source": "parent"}}
        assert result.status == "completed" and result.message is not None


async def test_chat_reports_failures_through_on_error(data_dir: Path) -> None:
    async with open_agent(Chatty, "fail", data_dir=data_dir) as agent:
        recorder = Recorder(agent)
        result = await agent.chat("fail please", recorder)
        assert result.status == "error"
        assert recorder.calls[-1] == ("error", "the model is down")
        failures: list[str] = []
        await agent.chat("fail again", ChatCallback(on_error=failures.append))  # plain functions work too
        assert failures == ["the model is down"]


async def test_a_callback_that_raises_does_not_break_the_turn(data_dir: Path) -> None:
    def boom(chunk: str) -> None:
        raise RuntimeError("callback bug")

    async with open_agent(Chatty, "boom", data_dir=data_dir) as agent:
        result = await agent.chat("hi", ChatCallback(on_event=boom))
        assert result.status == "completed" and agent.messages[-1].text == "Echo: hi"


async def test_a_signal_cancels_a_running_or_queued_turn(data_dir: Path) -> None:
    async with open_agent(Chatty, "signal", data_dir=data_dir) as agent:
        running, queued = anyio.Event(), anyio.Event()
        streaming = anyio.Event()
        results: dict[str, TurnResult] = {}

        def on_event(chunk: str) -> None:
            if "text-delta" in chunk:
                streaming.set()

        async with anyio.create_task_group() as tasks:
            async def first() -> None:
                results["first"] = await agent.chat("hang on", ChatCallback(on_event=on_event), signal=running)

            async def second() -> None:
                results["second"] = await agent.save_messages(["queued"], signal=queued)

            tasks.start_soon(first)
            with anyio.fail_after(5):
                await streaming.wait()
            tasks.start_soon(second)
            await anyio.sleep(0.05)
            queued.set()  # cancelled while it waits for its turn
            running.set()
        assert results["first"].status == "aborted" and results["second"].status == "aborted"
        assert agent.messages[1].text == "Thinking "  # the partial reply is kept
        already = anyio.Event()
        already.set()
        assert (await agent.save_messages(["never"], signal=already)).status == "aborted"


async def test_run_turn_modes(data_dir: Path) -> None:
    async with open_agent(Chatty, "modes", data_dir=data_dir) as agent:
        waited = await agent.run_turn(input="one")
        assert isinstance(waited, TurnResult) and waited.status == "completed"
        assert (await agent.run_turn(input="")).status == "skipped"  # type: ignore[union-attr]
        assert (await agent.run_turn(input=[])).status == "skipped"  # type: ignore[union-attr]
        continued = await agent.run_turn(continuation=True)
        assert isinstance(continued, TurnResult) and continued.continuation and continued.status == "completed"
        recorder = Recorder(agent)
        streamed = await agent.run_turn("stream", input="two", callback=recorder)
        assert isinstance(streamed, TurnResult) and recorder.calls[-1] == ("done", None)
        submitted = await agent.run_turn("submit", input="three", idempotency_key="k3")
        assert isinstance(submitted, Submission) and submitted.accepted
        done = await agent.wait_for_submission(submitted.submission_id, timeout=10)
        assert done.status == "completed"
        by_function = await agent.run_turn(input=lambda history: [f"I see {len(history)} messages"])
        assert isinstance(by_function, TurnResult) and agent.messages[-2].text == "I see 7 messages"
        with pytest.raises(ProtocolError, match="exactly one"):
            await agent.run_turn(input="x", continuation=True)
        with pytest.raises(ProtocolError, match="exactly one"):
            await agent.run_turn()
        with pytest.raises(ProtocolError):
            await agent.run_turn("submit", input=lambda history: ["x"])
        with pytest.raises(ProtocolError):
            await agent.run_turn("later")  # type: ignore[arg-type]


async def test_blocking_admission_inside_a_turn_points_to_submit_which_works(data_dir: Path) -> None:
    seen: list[str] = []

    class Nested(Chatty):
        async def on_chat_response(self, result: TurnResult) -> None:
            if len(self.messages) > 1 and self.messages[-2].text == "first":
                for attempt in (lambda: self.save_messages(["x"]), lambda: self.chat("x"),
                                lambda: self.run_turn(input="x"), lambda: self.continue_last_turn()):
                    try:
                        await attempt()
                    except TurnError as exc:
                        seen.append(str(exc))
                await self.submit_messages(["follow-up"], submission_id="follow")

    async with open_agent(Nested, "nested", data_dir=data_dir) as agent:
        assert (await agent.save_messages(["first"])).status == "completed"
        assert len(seen) == 4 and all("inside an active turn" in s and "submit_messages()" in s for s in seen)
        done = await agent.wait_for_submission("follow", timeout=10)
        assert done.status == "completed"
        assert [m.text for m in agent.messages] == ["first", "Echo: first", "follow-up", "Echo: follow-up"]


async def test_pending_interactions_and_waiting_until_stable(data_dir: Path) -> None:
    class WithBrowserTool(Chatty):
        def get_tools(self) -> list[Any]:
            return [dangerous]

    async with open_agent(WithBrowserTool, "pending", data_dir=data_dir) as agent:
        assert not agent.has_pending_interaction()
        assert await agent.wait_until_stable(timeout=1)
        await agent.save_messages(["approve this"])
        assert agent.messages[-1].tool_parts[0].state == "approval-requested"
        assert agent.has_pending_interaction()
        assert not await agent.wait_until_stable(timeout=0.05)
        await agent.approve_tool_call(agent.messages[-1].tool_parts[0].tool_call_id, True, auto_continue=True)
        assert await agent.wait_until_stable(timeout=5)
        assert not agent.has_pending_interaction()

        ask = client_tool("ask_browser", description="The browser answers.")
        await agent.chat("browser, please", client_tools=[ask])
        assert agent.messages[-1].tool_parts[0].state == "input-available"
        assert agent.has_pending_interaction()

    async with open_agent(Chatty, "busy", data_dir=data_dir) as agent:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(agent.save_messages, ["hang there"])
            await anyio.sleep(0.05)
            assert not await agent.wait_until_stable(timeout=0.05)
            assert agent.cancel_all_chats() == 1
        assert await agent.wait_until_stable(timeout=5)


async def test_cancel_chat_stops_one_turn(data_dir: Path) -> None:
    async with open_agent(Chatty, "cancel", data_dir=data_dir) as agent:
        started = anyio.Event()
        results: list[TurnResult] = []

        async def record(info: dict[str, Any]) -> None:
            results.append(TurnResult(request_id=info["requestId"], status="completed"))
            started.set()

        async with anyio.create_task_group() as tasks:
            async def go() -> None:
                results.append(await agent.chat("hang a while", ChatCallback(on_start=record)))

            tasks.start_soon(go)
            await started.wait()
            await anyio.sleep(0.05)
            assert agent.cancel_chat(results[0].request_id)
        assert results[-1].status == "aborted"
        assert not agent.cancel_chat(results[0].request_id)


async def test_a_client_tool_among_the_agents_own_tools_is_pending_until_the_client_answers(data_dir: Path) -> None:
    """`client_tool(...)` in `get_tools()` (no `execute`): its call waits for the client as one the
    browser registered does."""

    class DeclaresBrowserTool(Chatty):
        model = ScriptedModel([call("ask_browser"), "Blue it is."])

        def get_tools(self) -> list[Any]:
            return [dangerous, client_tool("ask_browser", description="The browser answers.")]

    async with open_agent(DeclaresBrowserTool, "declared", data_dir=data_dir) as agent:
        await agent.save_messages(["browser, please"])
        [part] = agent.messages[-1].tool_parts
        assert (part.name, part.state) == ("ask_browser", "input-available")
        assert agent.has_pending_interaction()
        assert not await agent.wait_until_stable(timeout=0.05)
        await agent.add_tool_result(part.tool_call_id, "blue", auto_continue=True)
        assert await agent.wait_until_stable(timeout=5)
        assert not agent.has_pending_interaction()
        assert agent.messages[-1].text.endswith("Blue it is.")
