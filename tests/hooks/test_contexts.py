"""What a hook's context tells it: the call at the top level (as the original spreads it), the
turn's cancel signal, and the session a turn is for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from think import Think, ToolCallContext, ToolCallResultContext, TurnConfig, TurnContext, open_agent, tool
from think.testing.models import ScriptedModel, call
from think.tools.tool import ToolContext

TOOL_SIGNALS: list[Any] = []


@tool
async def wait_forever(ctx: ToolContext) -> str:
    """Never finishes."""
    TOOL_SIGNALS.append(ctx.signal)
    ctx.agent.tool_started.set()
    await anyio.sleep_forever()
    return "unreachable"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Watching(Think):
    script: Any = None

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.model = ScriptedModel(type(self).script)
        self.calls: list[ToolCallContext] = []
        self.ended: list[ToolCallResultContext] = []
        self.turns: list[TurnContext] = []
        self.tool_started = anyio.Event()

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> list[Any]:
        return [add, wait_forever]

    async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
        self.turns.append(ctx)
        return TurnConfig(system=f"You serve session {ctx.session_id or 'root'}.")

    async def before_tool_call(self, ctx: ToolCallContext) -> None:
        self.calls.append(ctx)

    async def after_tool_call(self, ctx: ToolCallResultContext) -> None:
        self.ended.append(ctx)


def watching(script: Any) -> type[Watching]:
    return type("Scenario", (Watching,), {"script": script})


async def test_a_tool_call_hook_reads_tool_name_input_and_id_at_the_top_level(data_dir: Path) -> None:
    async with open_agent(watching([[call("add", a=2, b=3)], "5"]), "flat", data_dir=data_dir) as agent:
        assert (await agent.save_messages("add them")).status == "completed"
        [before], [after] = agent.calls, agent.ended
        part = agent.messages[-1].tool_parts[0]
        assert (before.tool_name, before.input, before.tool_call_id) == ("add", {"a": 2, "b": 3}, part.tool_call_id)
        assert (after.tool_name, after.input, after.tool_call_id) == ("add", {"a": 2, "b": 3}, part.tool_call_id)
        assert before.signal is not None and not before.signal.is_set()


async def test_stopping_a_turn_sets_the_cancel_signal_its_hooks_were_given(data_dir: Path) -> None:
    async with open_agent(watching([[call("wait_forever")], "never"]), "stop", data_dir=data_dir) as agent:
        results: list[Any] = []
        async with anyio.create_task_group() as group:
            async def run() -> None:
                results.append(await agent.save_messages("wait"))

            group.start_soon(run)
            await agent.tool_started.wait()
            ctx = agent.calls[0]
            assert ctx.signal is not None and not ctx.signal.is_set()
            assert agent.cancel_chat(ctx.request_id)
        assert results[0].status == "aborted"
        assert ctx.signal.is_set() and [ctx.signal] == TOOL_SIGNALS


async def test_before_turn_knows_the_session_so_each_session_gets_its_own_system_prompt(data_dir: Path) -> None:
    async with open_agent(watching(["root answer", "support answer"]), "sessions", data_dir=data_dir) as agent:
        support = agent.sessions.create("support", id="support")
        await agent.save_messages("hi")
        await agent.save_messages("hi", session=support.id)
        assert [t.session_id for t in agent.turns] == ["", "support"]
        assert [r.system for r in agent.model.requests] == ["You serve session root.", "You serve session support."]
