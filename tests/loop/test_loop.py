"""The agentic loop, through `run_loop` with a scripted model and real tools."""

from __future__ import annotations

import anyio
import pytest

from tests.helpers import request_for, run, types
from think.errors import ToolFailed
from think.loop import run_loop
from think.messages import JSONObject, ToolPart
from think.testing.models import HANG, ScriptedModel, call, error, reasoning, text
from think.tools import Tool, client_tool, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("kaboom")


@tool
def refuse() -> str:
    """Fails the way tool authors report failures."""
    raise ToolFailed("No rate for that currency today.")


async def test_text_reply_has_the_ai_sdk_chunk_order() -> None:
    chunks, message, result = await run(ScriptedModel(["Hello there."]))
    assert types(chunks) == ["start", "start-step", "text-start", "text-delta", "text-delta", "text-end",
                             "finish-step", "finish"]
    assert chunks[0] == {"type": "start", "messageId": "reply"}
    assert chunks[-1] == {"type": "finish", "finishReason": "stop"}
    assert message.text == "Hello there."
    assert result.status == "completed"


async def test_one_tool_turn_runs_the_tool_and_answers() -> None:
    model = ScriptedModel([[reasoning("Need a sum."), call("add", a=2, b=3)], "It is 5."])
    chunks, message, result = await run(model, [add])
    assert types(chunks) == [
        "start", "start-step", "reasoning-start", "reasoning-delta", "reasoning-delta", "reasoning-delta",
        "reasoning-end",
        "tool-input-start", "tool-input-delta", "tool-input-delta", "tool-input-available",
        "tool-output-available", "finish-step",
        "start-step", "text-start", "text-delta", "text-delta", "text-delta", "text-end", "finish-step", "finish",
    ]
    part = message.tool_parts[0]
    assert (part.state, part.input, part.output, part.name) == ("output-available", {"a": 2, "b": 3}, 5, "add")
    # The second model call saw the tool call and its result.
    second = model.requests[1].messages
    assert second[-1].role == "tool"
    assert second[-1].results[0].output == 5  # type: ignore[union-attr]
    assert result.status == "completed" and len(result.steps) == 2


async def test_parallel_tool_calls_run_concurrently_and_results_keep_call_order() -> None:
    order: list[str] = []

    @tool
    async def slow(label: str, seconds: float) -> str:
        """Sleep, then return the label."""
        await anyio.sleep(seconds)
        order.append(label)
        return label

    model = ScriptedModel([[call("slow", label="first", seconds=0.2), call("slow", label="second", seconds=0.01)],
                           "done"])
    with anyio.fail_after(1.0):
        started = anyio.current_time()
        chunks, message, _ = await run(model, [slow])
        elapsed = anyio.current_time() - started
    assert order == ["second", "first"]  # both ran at once: the short one finished first
    assert elapsed < 0.35
    outputs = [c for c in chunks if c["type"] == "tool-output-available"]
    assert [o["output"] for o in outputs] == ["second", "first"]  # UI sees them as they finish
    results = model.requests[1].messages[-1].results  # type: ignore[union-attr]
    assert [r.output for r in results] == ["first", "second"]  # the model sees them in call order
    assert [p.output for p in message.tool_parts] == ["first", "second"]


async def test_a_tool_that_raises_becomes_an_error_result_the_model_sees() -> None:
    model = ScriptedModel([[call("explode"), call("refuse")], "Sorry."])
    chunks, message, result = await run(model, [explode, refuse])
    errors = [c for c in chunks if c["type"] == "tool-output-error"]
    assert [e["errorText"] for e in errors] == ["RuntimeError: kaboom", "No rate for that currency today."]
    assert [p.state for p in message.tool_parts] == ["output-error", "output-error"]
    tool_message = model.requests[1].messages[-1]
    assert [r.is_error for r in tool_message.results] == [True, True]  # type: ignore[union-attr]
    assert result.status == "completed"


async def test_malformed_arguments_and_unknown_tools_are_input_errors() -> None:
    model = ScriptedModel([[call("add", raw='{"a": 1,'), call("nope", x=1), call("add", a="x", b=1)], "ok"])
    chunks, message, _ = await run(model, [add])
    input_errors = [c for c in chunks if c["type"] == "tool-input-error"]
    assert len(input_errors) == 3
    assert "Invalid JSON arguments" in input_errors[0]["errorText"]
    assert input_errors[1]["dynamic"] is True and "unavailable tool 'nope'" in input_errors[1]["errorText"]
    assert "Invalid input for tool 'add'" in input_errors[2]["errorText"]
    assert [p.state for p in message.tool_parts] == ["output-error"] * 3
    assert message.tool_parts[1].type == "dynamic-tool"
    results = model.requests[1].messages[-1].results  # type: ignore[union-attr]
    assert all(r.is_error for r in results)


async def test_max_steps_stops_a_model_that_keeps_calling_tools() -> None:
    model = ScriptedModel(lambda request: [call("add", a=1, b=1)])
    chunks, _, result = await run(model, [add], max_steps=3)
    assert result.status == "max-steps"
    assert len(model.requests) == 3
    assert types(chunks).count("start-step") == 3 and chunks[-1]["type"] == "finish"


async def test_a_tool_needing_approval_stops_the_turn_with_an_approval_request() -> None:
    @tool(needs_approval=lambda args: args["amount"] > 100)
    def pay(amount: int) -> str:
        """Pay an amount."""
        return f"paid {amount}"

    model = ScriptedModel([[call("pay", amount=5), call("pay", amount=500)]])
    chunks, message, result = await run(model, [pay])
    assert result.status == "awaiting-approval"
    approvals = [c for c in chunks if c["type"] == "tool-approval-request"]
    assert len(approvals) == 1 and approvals[0]["toolCallId"] == message.tool_parts[1].tool_call_id
    assert [p.state for p in message.tool_parts] == ["output-available", "approval-requested"]
    approval = message.tool_parts[1].approval
    assert approval is not None and approval.id == approvals[0]["approvalId"]
    assert chunks[-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert len(model.requests) == 1


async def test_a_client_tool_stops_the_turn_with_its_input_available() -> None:
    model = ScriptedModel([[call("get_location")]])
    chunks, message, result = await run(model, [client_tool("get_location", description="Where the user is")])
    assert result.status == "awaiting-client"
    assert message.tool_parts[0].state == "input-available"
    assert "tool-output-available" not in types(chunks)


async def test_a_model_error_mid_stream_ends_with_an_error_chunk_and_keeps_the_partial() -> None:
    chunks, message, result = await run(ScriptedModel([[text("Half an"), error("upstream 500")]]))
    assert types(chunks)[-1] == "error" and chunks[-1]["errorText"] == "upstream 500"
    assert "finish" not in types(chunks)
    assert message.text == "Half an" and result.status == "error" and result.error == "upstream 500"


async def test_async_generator_tools_stream_preliminary_outputs() -> None:
    @tool
    async def progress(n: int):  # type: ignore[no-untyped-def]
        """Count up to n."""
        for i in range(1, n + 1):
            yield {"done": i, "of": n}

    chunks, message, _ = await run(ScriptedModel([[call("progress", n=3)], "finished"]), [progress])
    outputs = [c for c in chunks if c["type"] == "tool-output-available"]
    assert [o.get("preliminary", False) for o in outputs] == [True, True, False]
    assert message.tool_parts[0].output == {"done": 3, "of": 3} and message.tool_parts[0].preliminary is None


async def test_cancellation_stops_within_one_chunk_and_the_partial_is_kept() -> None:
    model = ScriptedModel([["Hello", HANG]])
    chunks: list[JSONObject] = []
    tools: dict[str, Tool] = {}

    async def emit(chunk: JSONObject) -> None:
        chunks.append(chunk)
        if chunk["type"] == "text-delta":
            scope.cancel()

    with anyio.CancelScope() as scope:
        await run_loop(model, request_for("hi", tools), tools, emit=emit, message_id="m")
    assert scope.cancelled_caught
    assert types(chunks) == ["start", "start-step", "text-start", "text-delta"]


async def test_hooks_can_block_substitute_and_rewrite_tool_input() -> None:
    from think.hooks import Allow, Block, NoHooks, Substitute, ToolCallContext, ToolDecision

    class Hooks(NoHooks):
        async def before_tool_call(self, ctx: ToolCallContext) -> ToolDecision | None:
            if ctx.call.input.get("a") == 1:
                return Block()
            if ctx.call.input.get("a") == 2:
                return Substitute(output=99)
            return Allow(input={"a": 10, "b": 10})

    model = ScriptedModel([[call("add", a=1, b=0), call("add", a=2, b=0), call("add", a=3, b=0)], "ok"])
    tools = {"add": add}
    parts: list[ToolPart] = []
    from think.messages import Message
    from think.stream.fold import Fold

    message = Message(id="m", role="assistant")
    fold = Fold(message)

    async def emit(chunk: JSONObject) -> None:
        fold.apply(chunk)

    await run_loop(model, request_for("hi", tools), tools, emit=emit, hooks=Hooks(), message_id="m")
    parts = message.tool_parts
    assert [p.output for p in parts] == ['Tool "add" was blocked by beforeToolCall.', 99, 20]


@pytest.mark.parametrize("max_steps", [1, 2])
async def test_step_count_never_exceeds_max_steps(max_steps: int) -> None:
    model = ScriptedModel(lambda request: [call("add", a=1, b=2)])
    _, _, result = await run(model, [add], max_steps=max_steps)
    assert len(result.steps) == max_steps


async def test_signed_reasoning_blocks_stay_separate_and_call_metadata_round_trips() -> None:
    from think.models.base import ModelRequest, ReasoningContent, ToolCallContent
    from think.models.events import Finish, ReasoningDelta, StreamEvent, TextDelta, ToolCallReady

    class TwoBlocks:
        model_id = "two-blocks"

        def __init__(self) -> None:
            self.requests: list[ModelRequest] = []

        async def stream(self, request: ModelRequest):  # type: ignore[no-untyped-def]
            self.requests.append(request)
            events: list[StreamEvent]
            if len(self.requests) == 1:
                events = [ReasoningDelta("first"), ReasoningDelta("", {"anthropic": {"signature": "s1"}}),
                          ReasoningDelta("second"), ReasoningDelta("", {"anthropic": {"signature": "s2"}}),
                          ToolCallReady("c1", "add", '{"a":1,"b":2}', {"google": {"thoughtSignature": "t"}}),
                          Finish("tool-calls")]
            else:
                events = [TextDelta("3"), Finish("stop")]
            for event in events:
                yield event

    model = TwoBlocks()
    chunks, message, _ = await run(model, [add])  # type: ignore[arg-type]
    assert types(chunks).count("reasoning-start") == 2
    reasoning_parts = [p for p in message.to_json()["parts"] if p["type"] == "reasoning"]
    assert [(p["text"], p["providerMetadata"]) for p in reasoning_parts] == [
        ("first", {"anthropic": {"signature": "s1"}}), ("second", {"anthropic": {"signature": "s2"}})]
    assistant = model.requests[1].messages[1]
    assert [type(c) for c in assistant.content] == [ReasoningContent, ReasoningContent, ToolCallContent]  # type: ignore[union-attr]
    assert assistant.content[2].provider_metadata == {"google": {"thoughtSignature": "t"}}  # type: ignore[union-attr]
    assert message.tool_parts[0].call_provider_metadata == {"google": {"thoughtSignature": "t"}}


async def test_approved_calls_run_first_and_the_model_sees_their_results() -> None:
    from think.hooks import ToolCall

    model = ScriptedModel(["Paid."])
    tools: dict[str, Tool] = {"add": add}
    chunks: list[JSONObject] = []

    async def emit(chunk: JSONObject) -> None:
        chunks.append(chunk)

    result = await run_loop(model, request_for("pay", tools), tools, emit=emit,
                            approved_calls=[ToolCall(id="c9", name="add", input={"a": 4, "b": 5}),
                                            ToolCall(id="c10", name="gone", input={})])
    assert types(chunks)[:3] == ["start", "tool-output-available", "tool-output-error"]
    assert chunks[1] == {"type": "tool-output-available", "toolCallId": "c9", "output": 9}
    sent = model.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool"]
    assert [(r.call_id, r.output, r.is_error) for r in sent[2].results] == [  # type: ignore[union-attr]
        ("c9", 9, False), ("c10", "Tool 'gone' is not available to run after its approval.", True)]
    assert result.status == "completed"
