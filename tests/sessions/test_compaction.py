"""Compaction: summaries laid over message ranges, rolling summaries, automatic and overflow-driven."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from think import ConfigurationError, Message, ModelRequest, StorageError, Think, open_agent, tool
from think.context.overflow import ContextOverflowPolicy, default_context_overflow_classifier
from think.models.base import AssistantMessage, TextContent, ToolMessage, UserMessage
from think.sessions import Session, create_compact_function, summarizer_from_model
from think.stream.fanout import ChunkEvent, SessionChanged, TurnEvent, TurnFailed
from think.testing.models import ScriptedModel, call, error


def texts(request: ModelRequest) -> list[str]:
    out = []
    for message in request.messages:
        if isinstance(message, UserMessage | AssistantMessage):
            out += [c.text for c in message.content if isinstance(c, TextContent)]
    return out


def summarizer() -> ScriptedModel:
    def summarize(request: ModelRequest) -> str:
        prompt = texts(request)[0]
        rolled = "rolled " if "Earlier summary:" in prompt else ""
        return f"SUMMARY {rolled}of {prompt.count('[user]')} user messages"

    return ScriptedModel(summarize)


class Compacting(Think):
    """Answers with how many messages it saw; summarizes the middle of the conversation."""

    summaries = summarizer()
    threshold: int | None = None
    model = ScriptedModel(lambda request: f"saw {len(request.messages)}")

    def get_model(self) -> ScriptedModel:
        return self.model

    def configure_session(self, session: Session) -> Session:
        session.on_compaction(create_compact_function(summarizer_from_model(self.summaries), protect_head=1,
                                                      tail_token_budget=10, min_tail_messages=2))
        if self.threshold is not None:
            session.compact_after(self.threshold)
        return session


WORDS = ["aardvark", "bassoon", "cormorant", "dulcimer", "echidna", "flugelhorn"]


async def test_compaction_keeps_originals_searchable_and_the_model_sees_the_summary(data_dir: Path) -> None:
    async with open_agent(Compacting, "c", data_dir=data_dir) as agent:
        for word in WORDS:
            await agent.save_messages([f"remember the {word}"])
        before = [m.id for m in agent.messages]
        compaction = await agent.session.compact()
        assert compaction is not None and compaction.summary == "SUMMARY of 4 user messages"
        assert (compaction.from_id, compaction.to_id) == (before[1], before[-3])  # head and tail are kept
        # The transcript clients see is unchanged; nothing was deleted.
        assert [m.id for m in agent.messages] == before
        assert agent.session.count_rows() == 12
        # The model sees the first message, the summary, then the recent tail.
        await agent.save_messages(["and now?"])
        assert texts(agent.model.requests[-1]) == ["remember the aardvark", "SUMMARY of 4 user messages",
                                                   "remember the flugelhorn", "saw 11", "and now?"]
        # Every original stays searchable, compacted ones included.
        hits = agent.session.search("bassoon")
        assert [h.id for h in hits] == [before[2]]
        assert hits[0].snippet == "remember the **bassoon**"
    async with open_agent(Compacting, "c", data_dir=data_dir) as agent:  # the overlay survives a restart
        assert agent.session.compaction_in_effect() == compaction


async def test_a_new_summary_folds_in_the_previous_one(data_dir: Path) -> None:
    async with open_agent(Compacting, "roll", data_dir=data_dir) as agent:
        for word in WORDS[:4]:
            await agent.save_messages([f"remember the {word}"])
        first = await agent.session.compact()
        for word in WORDS[4:]:
            await agent.save_messages([f"remember the {word}"])
        second = await agent.session.compact()
        assert first is not None and second is not None
        assert second.summary.startswith("SUMMARY rolled")
        assert second.from_id == first.from_id  # it extends the earlier range
        assert [c.id for c in agent.session.get_compactions()] == [second.id, first.id]
        view = agent.session.model_view()
        assert [m.text for m in view].count(second.summary) == 1 and first.summary not in [m.text for m in view]


async def test_compact_after_summarizes_automatically_and_reports_it(data_dir: Path) -> None:
    class Auto(Compacting):
        threshold = 120

    async with open_agent(Auto, "auto", data_dir=data_dir) as agent:
        events: list[SessionChanged] = []

        async def listen(event: TurnEvent) -> None:
            if isinstance(event, SessionChanged):
                events.append(event)

        agent.fanout.subscribe(listen)
        for word in WORDS:
            await agent.save_messages([f"remember the {word} " * 4])
        assert agent.session.get_compactions()
        assert {e.phase for e in events} == {"idle", "compacting"}
        assert all(e.token_threshold == 120 for e in events)
        assert events[-1].phase == "idle" and events[-1].token_estimate <= 120
        assert max(e.token_estimate for e in events) > 120


async def test_compaction_needs_a_function_and_a_range_on_the_path(tmp_path: Path) -> None:
    from think.sessions import MIGRATIONS
    from think.storage import Database, migrate

    db = Database(tmp_path / "s.db")
    migrate(db, MIGRATIONS)
    session = Session(db)
    with pytest.raises(ConfigurationError, match="on_compaction"):
        await session.compact()
    session.add_messages([Message.user(f"m{i}", id=f"m{i}") for i in range(6)])
    with pytest.raises(StorageError, match="not on the active path"):
        session.add_compaction("s", "m1", "nope")
    with pytest.raises(StorageError, match="must be on the active path, before"):
        session.add_compaction("s", "m4", "m2")
    first = session.add_compaction("s1", "m1", "m2")
    with pytest.raises(StorageError, match="must end after 'm2'"):
        session.add_compaction("s2", "m1", "m2")
    assert session.get_compactions() == [first]
    assert [m.text for m in session.model_view()] == ["m0", "s1", "m3", "m4", "m5"]
    session.add_messages([Message.user("m6", id="m6")])  # appends follow the overlay
    assert [m.text for m in session.model_view()][-2:] == ["m5", "m6"]


def test_create_compact_function_keeps_head_and_tail_and_never_splits_a_waiting_call() -> None:
    import anyio

    from think.sessions import Compaction, CompactionContext

    prompts: list[str] = []

    async def summarize(prompt: str) -> str:
        prompts.append(prompt)
        return "S"

    fn = create_compact_function(summarize, protect_head=2, tail_token_budget=8, min_tail_messages=2)
    messages = [Message.user(f"m{i}", id=f"m{i}") for i in range(8)]
    waiting = Message.from_json({"id": "m5", "role": "assistant", "parts": [
        {"type": "tool-lookup", "toolCallId": "c1", "state": "input-available", "input": {}}]})
    messages[5] = waiting

    async def run(previous: Compaction | None = None, items: Sequence[Message] = messages) -> object:
        ctx = CompactionContext(session=None, previous=previous, token_counter=lambda m: 4)  # type: ignore[arg-type]
        return await fn(items, ctx)

    result = anyio.run(run)
    # Head m0-m1 and tail m6-m7 stay; m5 waits for a tool result, so it stays too.
    assert (result.from_id, result.to_id, result.summary) == ("m2", "m4", "S")  # type: ignore[attr-defined]
    assert "[user] m2" in prompts[0] and "[user] m1" not in prompts[0] and "Earlier summary" not in prompts[0]
    previous = Compaction(id="c", summary="EARLIER", from_id="m2", to_id="m3", created_at=0)
    result = anyio.run(run, previous)
    assert (result.from_id, result.to_id) == ("m2", "m4")  # type: ignore[attr-defined]
    assert "Earlier summary:\nEARLIER" in prompts[1] and "[user] m3" not in prompts[1]
    assert anyio.run(run, None, messages[:4]) is None  # everything fits in the head and tail


class Overflowing(Compacting):
    """A model whose window only fits a summarized conversation."""

    limit = 6

    def get_model(self) -> ScriptedModel:
        def reply(request: ModelRequest) -> object:
            if len(request.messages) > self.limit:
                return error("This model's maximum context length is 8192 tokens; your messages resulted in "
                             "9000 tokens (context_length_exceeded)", status=400)
            return f"fits in {len(request.messages)}"

        return ScriptedModel(reply)


async def test_a_context_overflow_compacts_and_retries_the_turn(data_dir: Path) -> None:
    async with open_agent(Overflowing, "o", data_dir=data_dir) as agent:
        failures: list[TurnEvent] = []
        chunks: list[str] = []

        async def listen(event: TurnEvent) -> None:
            if isinstance(event, TurnFailed):
                failures.append(event)
            elif isinstance(event, ChunkEvent):
                chunks.append(event.chunk["type"])

        agent.fanout.subscribe(listen)
        for word in WORDS[:3]:
            assert (await agent.save_messages([word])).status == "completed"
        chunks.clear()
        result = await agent.save_messages(["one more"])  # 7 messages: over the limit
        assert chunks.count("start") == 1 and chunks[-1] == "finish"
        assert (result.status, result.error) == ("completed", None)
        assert result.message is not None and result.message.text == "fits in 4"
        assert failures == []  # the failed attempt is not reported, nor persisted
        assert [m.role for m in agent.messages] == ["user", "assistant"] * 4
        assert agent.session.compaction_in_effect() is not None


async def test_an_overflow_that_compaction_cannot_fix_is_reported(data_dir: Path) -> None:
    class Hopeless(Overflowing):
        limit = 0

    async with open_agent(Hopeless, "h", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hi"])
        assert result.status == "error" and "context_length_exceeded" in (result.error or "")
        assert [m.role for m in agent.messages] == ["user", "assistant"]  # the user's message is kept


@tool
def lookup(city: str) -> str:
    """Look something up."""
    return f"{city}: sunny " * 20


class Proactive(Compacting):
    context_overflow = ContextOverflowPolicy(max_input_tokens=50, headroom=0.9)
    seen: ClassVar[list[ModelRequest]] = []

    def get_model(self) -> ScriptedModel:
        def reply(request: ModelRequest) -> object:
            self.seen.append(request)
            if isinstance(request.messages[-1], ToolMessage):
                return "done"
            return [call("lookup", city="Lisbon")]

        return ScriptedModel(reply)

    def get_tools(self) -> list:  # type: ignore[type-arg]
        return [lookup]


async def test_proactive_compaction_before_a_step_keeps_the_turns_own_messages(data_dir: Path) -> None:
    async with open_agent(Proactive, "p", data_dir=data_dir) as agent:
        await agent.add_messages([m for w in WORDS for m in (f"tell me about {w}",
                                  {"id": f"a-{w}", "role": "assistant", "parts": [{"type": "text", "text": w}]})])
        Proactive.seen.clear()
        result = await agent.save_messages(["weather?"])
        assert result.status == "completed"
        first, second = Proactive.seen
        assert len(first.messages) == 13  # ScriptedModel reports 10 input tokens a message: over 45
        assert agent.session.compaction_in_effect() is not None
        # Step 2: the recompacted history, then this turn's tool call and result.
        assert texts(second)[1].startswith("SUMMARY")
        assert isinstance(second.messages[-1], ToolMessage) and isinstance(second.messages[-2], AssistantMessage)
        assert len(second.messages) < len(first.messages) + 2


def test_the_default_classifier_knows_the_major_providers_overflow_errors() -> None:
    for text in ["prompt is too long: 210000 tokens > 200000 maximum",  # Anthropic
                 "This model's maximum context length is 128000 tokens (context_length_exceeded)",  # OpenAI
                 "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",  # Gemini
                 "Please reduce the length of the messages or completion.",  # Groq / OpenAI-compatible
                 "the request exceeds the available context size, try increasing the context window"]:  # llama.cpp
        assert default_context_overflow_classifier(text) == "context_overflow", text
    assert default_context_overflow_classifier("rate limit exceeded") is None


async def test_a_failing_automatic_compaction_does_not_fail_the_turn(data_dir: Path) -> None:
    failures: list[BaseException] = []

    class Broken(Think):
        def get_model(self) -> ScriptedModel:
            return ScriptedModel(lambda request: "fine")

        def configure_session(self, session: Session) -> Session:
            async def explode(messages: Sequence[Message], ctx: object) -> None:
                raise RuntimeError("summarizer is down")

            return session.on_compaction(explode).compact_after(1, token_counter=lambda m: 1_000) \
                .on_compaction_error(failures.append)

    async with open_agent(Broken, "b", data_dir=data_dir) as agent:
        result = await agent.save_messages(["hello"])
        assert result.status == "completed" and result.message is not None
        assert [str(e) for e in failures] == ["summarizer is down"] * 2  # before the model call and after
        assert agent.session.token_estimate() == 2_000  # the custom counter
