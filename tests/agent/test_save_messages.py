"""Programmatic turns through `open_agent(...)` and `save_messages`, with real SQLite files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from tests.agent.agents import Calculator
from think import Message, Think, TurnConfig, TurnContext, TurnError, open_agent, tool
from think.stream.fanout import ChunkEvent, TurnEvent
from think.testing.models import HANG, ScriptedModel, call, error

ROOT = Path(__file__).resolve().parents[2]


async def test_a_multi_step_tool_turn_survives_a_new_process(data_dir: Path) -> None:
    async with open_agent(Calculator, "calc", data_dir=data_dir) as agent:
        result = await agent.save_messages(["What is 2+3, then 5+5?"])
        assert result.status == "completed" and result.error is None
        here = [m.to_json() for m in agent.messages]
    assert [m["role"] for m in here] == ["user", "assistant"]
    tool_parts = [p for p in here[1]["parts"] if p["type"] == "tool-add"]
    assert [(p["state"], p["output"]) for p in tool_parts] == [("output-available", 5), ("output-available", 10)]
    assert here[1]["parts"][-1] == {"type": "text", "text": "2 + 3 = 5, and 5 + 5 = 10.", "state": "done"}

    script = (
        "import anyio, json\n"
        "from think import open_agent\n"
        "from tests.agent.agents import Calculator\n"
        "async def main():\n"
        f"    async with open_agent(Calculator, 'calc', data_dir={str(data_dir)!r}) as agent:\n"
        "        print(json.dumps([m.to_json() for m in agent.messages]))\n"
        "anyio.run(main)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert json.loads(out.stdout) == here


class Slow(Think):
    model = ScriptedModel([["Hello", HANG]])

    def get_model(self) -> ScriptedModel:
        return self.model


async def test_cancel_mid_stream_keeps_the_partial_reply(data_dir: Path) -> None:
    async with open_agent(Slow, "s", data_dir=data_dir) as agent:
        seen = anyio.Event()

        async def listen(event: TurnEvent) -> None:
            if isinstance(event, ChunkEvent) and event.chunk["type"] == "text-delta":
                seen.set()

        agent.fanout.subscribe(listen)
        results = []
        async with anyio.create_task_group() as tg:
            async def turn() -> None:
                results.append(await agent.save_messages(["hi"], request_id="r1"))

            tg.start_soon(turn)
            with anyio.fail_after(5):
                await seen.wait()
            assert agent.cancel_chat("r1")
        assert results[0].status == "aborted"
        reply = agent.messages[-1]
        assert reply.role == "assistant"
        assert reply.to_json()["parts"][-1] == {"type": "text", "text": "Hello", "state": "streaming"}
    async with open_agent(Slow, "s", data_dir=data_dir) as agent:
        assert [m.role for m in agent.messages] == ["user", "assistant"]


class Failing(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel([["Partial answer", error("provider exploded", status=500)]])


async def test_a_model_error_mid_stream_is_recorded_and_the_partial_kept(data_dir: Path) -> None:
    async with open_agent(Failing, "f", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert (result.status, result.error) == ("error", "provider exploded")
        assert [m.role for m in agent.messages] == ["user", "assistant"]
        assert agent.messages[-1].text == "Partial answer"


class Huge(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel([[call("dump")], "done"])

    def get_tools(self) -> list:  # type: ignore[type-arg]
        @tool
        def dump() -> str:
            """Return a lot of text."""
            return "x" * 3_000_000

        return [dump]


async def test_a_tool_output_larger_than_a_row_is_stored_whole(data_dir: Path) -> None:
    async with open_agent(Huge, "h", data_dir=data_dir) as agent:
        result = await agent.save_messages(["dump it"])
        assert result.status == "completed"
        part = agent.messages[-1].tool_parts[0]
        assert part.output == "x" * 3_000_000  # split across rows, not cut
        row = agent.db.one("SELECT length(body) AS size, chunks FROM think_messages WHERE role = 'assistant'")
        assert row is not None and row["size"] <= 1_800_000 and row["chunks"] == 1


class Echo(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: f"echo {len(request.messages)}")


async def test_turns_queue_in_arrival_order(data_dir: Path) -> None:
    async with open_agent(Echo, "q", data_dir=data_dir) as agent:
        results = []
        async with anyio.create_task_group() as tg:
            for i in range(3):
                async def go(i: int = i) -> None:
                    results.append((i, await agent.save_messages([f"m{i}"])))

                tg.start_soon(go)
                await anyio.lowlevel.checkpoint()
        texts = [(m.role, m.text) for m in agent.messages]
        assert texts == [("user", "m0"), ("assistant", "echo 1"), ("user", "m1"), ("assistant", "echo 3"),
                         ("user", "m2"), ("assistant", "echo 5")]


async def test_clear_deletes_everything_and_queued_turns_are_skipped(data_dir: Path) -> None:
    async with open_agent(Slow, "c", data_dir=data_dir) as agent:
        agent.model = ScriptedModel([["Hello", HANG], "never"])
        results: dict[str, object] = {}
        async with anyio.create_task_group() as tg:
            async def go(rid: str) -> None:
                results[rid] = (await agent.save_messages([rid], request_id=rid)).status

            tg.start_soon(go, "a")
            await anyio.sleep(0.05)
            tg.start_soon(go, "b")
            await anyio.sleep(0.05)
            await agent.clear_messages()
        assert results == {"a": "aborted", "b": "skipped"}
        # The aborted turn does not write its partial into the new, empty conversation.
        assert agent.messages == []
        assert agent.session.count_rows() == 0


async def test_resaving_a_known_message_does_not_duplicate_or_rewrite_it(data_dir: Path) -> None:
    async with open_agent(Echo, "u", data_dir=data_dir) as agent:
        first = Message.user("hello", id="u1")
        await agent.save_messages([first])
        await agent.save_messages([first, Message.user("again", id="u2")])
        assert [m.id for m in agent.messages if m.role == "user"] == ["u1", "u2"]
        assert agent.session.count_rows() == 4


async def test_max_persisted_messages_keeps_only_the_newest(data_dir: Path) -> None:
    class Short(Echo):
        max_persisted_messages = 3

    async with open_agent(Short, "m", data_dir=data_dir) as agent:
        for i in range(3):
            await agent.save_messages([f"m{i}"])
        assert [m.text for m in agent.messages] == ["echo 3", "m2", "echo 3"]
        assert agent.session.count_rows() == 3
    async with open_agent(Short, "m", data_dir=data_dir) as agent:
        assert [m.text for m in agent.messages] == ["echo 3", "m2", "echo 3"]


async def test_configure_persists(data_dir: Path) -> None:
    async with open_agent(Echo, "cfg", data_dir=data_dir) as agent:
        assert agent.get_config() is None
        agent.configure({"tone": "dry"})
    async with open_agent(Echo, "cfg", data_dir=data_dir) as agent:
        assert agent.get_config() == {"tone": "dry"}


async def test_before_turn_can_switch_the_model_and_on_chat_error_rewrites_errors(data_dir: Path) -> None:
    other = ScriptedModel(["from the other model"])

    class Switching(Echo):
        async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
            return TurnConfig(model=other) if ctx.body and ctx.body.get("use_other") else None

        async def on_chat_error(self, error: BaseException, ctx: object) -> str:
            return f"friendly: {error}"

    async with open_agent(Switching, "sw", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"], body={"use_other": True})
        assert agent.messages[-1].text == "from the other model" and result.status == "completed"

    class Broken(Echo):
        async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
            raise RuntimeError("hook bug")

        async def on_chat_error(self, error: BaseException, ctx: object) -> str:
            return f"friendly: {error}"

    async with open_agent(Broken, "br", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert (result.status, result.error) == ("error", "friendly: hook bug")
        assert [m.role for m in agent.messages] == ["user"]  # nothing persisted is lost


async def test_a_blocking_turn_api_inside_a_turn_raises_a_clear_error(data_dir: Path) -> None:
    errors: list[str] = []

    class Nested(Think):
        def get_model(self) -> ScriptedModel:
            return ScriptedModel([[call("again")], "ok"])

        def get_tools(self) -> list:  # type: ignore[type-arg]
            agent = self

            @tool
            async def again() -> str:
                """Try to start a turn from inside a turn."""
                try:
                    await agent.save_messages(["nested"])
                except TurnError as exc:
                    errors.append(str(exc))
                    raise
                return "unreachable"

            return [again]

    async with open_agent(Nested, "n", data_dir=data_dir) as agent:
        result = await agent.save_messages(["go"])
        assert result.status == "completed"
        assert errors and "inside an active turn" in errors[0]
        assert agent.messages[-1].tool_parts[0].state == "output-error"


@pytest.mark.parametrize("bad", [42, None, 3.5])
async def test_save_messages_rejects_what_is_not_a_message(data_dir: Path, bad: object) -> None:
    from think import ProtocolError

    async with open_agent(Echo, "bad", data_dir=data_dir) as agent:
        with pytest.raises(ProtocolError):
            await agent.save_messages(bad)  # type: ignore[arg-type]


async def test_save_messages_takes_a_plain_string_like_chat_does(data_dir: Path) -> None:
    async with open_agent(Echo, "text", data_dir=data_dir) as agent:
        result = await agent.save_messages("hello there")
        assert result.status == "completed"
        assert (agent.messages[0].role, agent.messages[0].text) == ("user", "hello there")
        await agent.save_messages(Message.user("a Message works too", id="one"))
        assert [m.id for m in agent.messages if m.role == "user"][-1] == "one"


async def test_regenerate_makes_a_sibling_answer_and_keeps_the_old_one(data_dir: Path) -> None:
    from think import TurnRequest

    async with open_agent(Echo, "regen", data_dir=data_dir) as agent:
        await agent.save_messages([Message.user("hi", id="u1")])
        first = agent.messages[-1].id
        result = await agent.run(TurnRequest(request_id="r2", parent_id="u1"))
        assert result.status == "completed"
        assert [m.id for m in agent.messages] == ["u1", result.message.id]  # type: ignore[union-attr]
        assert result.message is not None and result.message.id != first
        assert agent.session.count_rows() == 3
